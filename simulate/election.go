package simulate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// newElectionLocker returns client c as a candidate of the Election strategy over lc: Lock
// campaigns, and a term is one critical section, its number the fencing token of the store's
// writes. The Client keeps the term alive while the candidate leads.
func newElectionLocker(lc *redlock.Client, key string, ttl time.Duration, c *client) (locker, error) {
	e, err := lc.Election(key, ttl)
	if err != nil {
		return nil, err
	}
	value := fmt.Sprintf("client%d", c.id+1) // the candidate's name, as a leader proclaims it
	campaign := func(ctx context.Context, _ time.Duration) (holding, error) {
		t, err := e.Campaign(ctx, value)
		if err != nil {
			return nil, err
		}
		return electionHolding{t}, nil
	}
	return redlockLocker{c: lc, acquire: campaign}, nil
}

// electionHolding is a leader's term.
type electionHolding struct{ t *redlock.Term }

func (h electionHolding) Until() (time.Time, bool) { return h.t.Until(), true }

// Extend does nothing: the Client keeps the term alive.
func (h electionHolding) Extend(context.Context, time.Duration) error { return nil }
func (h electionHolding) Unlock(ctx context.Context) error            { return h.t.Resign(ctx) }
func (h electionHolding) Fence() uint64                               { return h.t.Term() }
func (h electionHolding) Lost() <-chan struct{}                       { return h.t.Lost() }

// A loser is a holding that says when it can no longer be proved held: a leader's term.
type loser interface {
	Lost() <-chan struct{}
}

// lost reports whether h is a loser whose Lost channel is closed.
func lost(h holding) bool {
	l, ok := h.(loser)
	if !ok {
		return false
	}
	select {
	case <-l.Lost():
		return true
	default:
	}
	return false
}

// lostSlack is how late, in scenario time, a watcher may see a Lost channel that closed at the
// end of its validity: in real time a goroutine wakes late on a loaded machine.
const lostSlack = TTL / 20

// watchLost watches h's Lost channel, when h has one, until it closes (Unlock closes it too).
// The returned function waits for that and returns when it closed, in scenario time: when the
// watcher saw it, or the end of h's validity when the watcher saw it at most lostSlack after
// that (a loss by expiry closes it then). Call it after Unlock. It returns 0 for a holding
// without a Lost channel.
func (r *run) watchLost(h holding) func() time.Duration {
	l, ok := h.(loser)
	if !ok {
		return func() time.Duration { return 0 }
	}
	seen := make(chan time.Duration, 1)
	go func() {
		<-l.Lost()
		seen <- r.since(time.Now())
	}()
	return func() time.Duration {
		at := <-seen
		if until, ok := h.Until(); ok && r.since(until) <= at && at-r.since(until) <= lostSlack {
			at = r.since(until)
		}
		return at
	}
}

// failovers returns, for every leader that resigned while another candidate waited, the time
// from its Resign call to the next leader's election, in the order of the elections.
func failovers(ss []section) []time.Duration {
	terms := slices.Clone(ss)
	slices.SortFunc(terms, func(a, b section) int { return int(a.Acquired - b.Acquired) })
	var out []time.Duration
	for i := 1; i < len(terms); i++ {
		prev, next := terms[i-1], terms[i]
		if prev.Lost == 0 && next.Asked < prev.Unlock && next.Acquired >= prev.Unlock {
			out = append(out, next.Acquired-prev.Unlock)
		}
	}
	return out
}

// twoLeaders returns a note when a candidate was elected while an earlier term could still be
// proved held: before that term's Lost closed or its leader resigned. Lost must close before
// anyone else can be elected.
func twoLeaders(ss []section) string {
	terms := slices.Clone(ss)
	slices.SortFunc(terms, func(a, b section) int { return int(a.Acquired - b.Acquired) })
	for i, a := range terms {
		end := a.Unlock
		if a.Lost != 0 {
			end = min(end, a.Lost)
		}
		for _, b := range terms[i+1:] {
			if b.Acquired < end {
				return fmt.Sprintf("client %d was elected at %.2fs while client %d's term, from %.2fs, was not lost until %.2fs",
					b.Client+1, b.Acquired.Seconds(), a.Client+1, a.Acquired.Seconds(), end.Seconds())
			}
		}
	}
	return ""
}
