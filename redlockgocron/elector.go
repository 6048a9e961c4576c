package redlockgocron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/quorumlock/redlock/redlock"
)

// ErrNotLeader is returned by Elector.IsLeader when this scheduler does not hold a term.
var ErrNotLeader = errors.New("redlock: redlockgocron: not the leader")

// An Elector is a gocron.Elector that campaigns for the leadership of an election on a Client's
// quorum (see redlock.Election) in a goroutine of its own, and reports this scheduler the
// leader while it holds a term.
type Elector struct {
	election *redlock.Election
	name     string
	value    string
	done     chan struct{}

	mu   sync.Mutex
	term *redlock.Term // the last term won; nil before the first
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector returns an Elector that campaigns in the election name of c with value (this
// scheduler's address or name, which Election.Leader and Observe show), whose terms last ttl
// unless the Client renews them, as it does while it can. Pass it to
// gocron.WithDistributedElector on every scheduler, each with a Client of its own over the same
// nodes.
//
// It campaigns until ctx ends or c is closed: it waits in the election's line, leads until its
// term is lost, and then campaigns again. When ctx ends it resigns, and the next candidate in
// line leads at once; Close of c does too. A leader that crashes, or whose renewals fail, is
// followed within ttl. Done is closed once the campaign has ended.
//
// Bad input is an error, and sends nothing: a nil c, an empty name or value, a ttl that
// Client.Lock refuses.
func NewElector(ctx context.Context, c *redlock.Client, name, value string, ttl time.Duration) (*Elector, error) {
	if c == nil {
		return nil, errors.New("redlock: redlockgocron: nil Client")
	}
	if value == "" {
		return nil, errors.New("redlock: redlockgocron: empty value")
	}
	e, err := c.Election(name, ttl)
	if err != nil {
		return nil, err
	}
	el := &Elector{election: e, name: name, value: value, done: make(chan struct{})}
	go el.campaign(ctx, ttl)
	return el, nil
}

// IsLeader returns nil while this scheduler holds a term of the election: from the moment its
// campaign won until the term can no longer be proved held (redlock.Term.Lost), which happens
// before any other candidate can win. Otherwise it returns an error wrapping ErrNotLeader. It
// reads the clock, not only a channel: a scheduler whose process was paused past its term's
// end is not the leader when it continues, even before its timers have run. gocron calls it
// before each run; a run that started while leading is not stopped when the term ends.
func (e *Elector) IsLeader(context.Context) error {
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t == nil {
		return fmt.Errorf("%w of %q (no term won yet)", ErrNotLeader, e.name)
	}
	select {
	case <-t.Lost():
		return fmt.Errorf("%w of %q (term %d ended)", ErrNotLeader, e.name, t.Term())
	default:
		return nil
	}
}

// Done returns a channel that is closed when the campaign has ended, because its ctx ended
// (and the term, if any, was resigned) or its Client was closed. IsLeader then returns an error.
func (e *Elector) Done() <-chan struct{} { return e.done }

// campaign wins terms one after another until ctx ends or the Client closes.
func (e *Elector) campaign(ctx context.Context, ttl time.Duration) {
	defer close(e.done)
	for {
		t, err := e.election.Campaign(ctx, e.value)
		switch {
		case ctx.Err() != nil || errors.Is(err, redlock.ErrClosed):
			return
		case err != nil:
			// Not a refusal (Campaign waits through those): the term ended as it was won,
			// say. Try again after a pause, so that a lasting fault does not spin.
			if !sleep(ctx, ttl/10) {
				return
			}
			continue
		}
		e.mu.Lock()
		e.term = t
		e.mu.Unlock()
		select {
		case <-t.Lost(): // lost, resigned or closed: campaign again, or find the Client closed
		case <-ctx.Done():
			// Resign at once, so that the next candidate leads now, not after the ttl. A
			// resignation outlasting the term would be moot: the term expires anyway.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
			t.Resign(rctx)
			cancel()
			return
		}
	}
}

// sleep waits for d or ctx, and reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
