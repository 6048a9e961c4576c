package redlock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
)

// Leader returns the election's leader as a quorum of nodes sees it, reading every node once
// and waiting for each up to the node timeout, or ErrNoLeader when no quorum holds the
// election under one term. When too few nodes answered to tell, it returns an error wrapping
// ErrNoQuorum and a *NodeError for each node that did not answer.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	names := e.c.opts.names
	replies, start, err := e.c.read(ctx, wire.Inspect{Mutex: e.keys.MutexKeys, RWMutex: names.RWMutex(e.name),
		Semaphore: names.Semaphore(e.name), Value: e.keys.Value})
	if err != nil {
		return Leader{}, errors.Join(ErrNoQuorum, err)
	}
	return e.leaderOf(replies, start)
}

// leaderOf weighs the nodes' readings, sent at start: the leader is the term whose token a
// quorum holds, with the latest value those nodes hold for it.
func (e *Election) leaderOf(replies []quorum.Reply[wire.Reading], start time.Time) (Leader, error) {
	c := e.c
	holding := map[string][]wire.Reading{}
	answered := 0
	var failed []error
	for _, rep := range replies {
		if rep.Err != nil {
			failed = append(failed, rep.Err)
			continue
		}
		answered++
		if t := rep.Value.Lock.Token; t != "" {
			holding[t] = append(holding[t], rep.Value)
		}
	}
	for _, rs := range holding {
		if len(rs) < c.quorum {
			continue
		}
		var best wire.Value
		var ttls []time.Duration
		for _, r := range rs {
			if v, ok := wire.DecodeValue(r.Value); ok && (v.Term > best.Term || v.Term == best.Term && v.Version > best.Version) {
				best = v
			}
			ttls = append(ttls, r.Lock.TTL)
		}
		if best.Term == 0 { // its second round has not stored a value yet: not a term yet
			break
		}
		slices.Sort(ttls)
		// The nodes read their ttls after start: counted from it, Until is never later than the
		// quorum keeps the term.
		left := ttls[len(ttls)-c.quorum] - clock.Drift(e.ttl, c.opts.driftFactor)
		return Leader{Value: best.Value, Term: best.Term, Until: start.Add(left)}, nil
	}
	if answered < c.quorum {
		why := errors.New("redlock: too few nodes answered to tell the leader")
		return Leader{}, errors.Join(append([]error{ErrNoQuorum, why}, failed...)...)
	}
	return Leader{}, ErrNoLeader
}

// Observe returns a channel that receives the election's leader now, then every change: a new
// leader, a Proclaim, and the lack of a leader (Leader{}: Value "" and Term 0). Renewals are
// not changes. A slow reader finds the latest state in the channel, never a backlog. The
// channel is closed when ctx ends or the Client closes. It hears of changes from the releases
// that the nodes announce, and reads the nodes again at the end of a term and every third of
// the ttl, so that it keeps up across a lost announcement or a node's restart.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	c := e.c
	ch := make(chan Leader, 1)
	if c.enter() != nil {
		close(ch)
		return ch
	}
	defer c.leave()
	w, _ := c.listener.watch(e.keys.Value)
	c.life.bg.Go(func() {
		defer close(ch)
		defer c.listener.leave(w)
		e.observe(ctx, w, ch)
	})
	return ch
}

// observe sends the leader to ch whenever it changed, until ctx ends or the Client closes.
func (e *Election) observe(ctx context.Context, w *waiter, ch chan Leader) {
	c := e.c
	var last Leader
	sent := false
	for {
		l, err := e.Leader(ctx)
		if err == nil || errors.Is(err, ErrNoLeader) {
			if !sent || l.Value != last.Value || l.Term != last.Term {
				latest(ch, l)
				sent = true
			}
			last = l
		}
		next := e.ttl / 3
		if last.Term != 0 {
			next = min(next, max(last.Until.Sub(c.opts.clock.Now()), 0)+time.Millisecond)
		}
		t := c.opts.clock.NewTimer(next)
		select {
		case <-w.wake:
		case <-t.C:
		case <-ctx.Done():
		case <-c.life.done:
		}
		t.Stop()
		if ctx.Err() != nil || c.life.listening.Err() != nil {
			return
		}
	}
}

// latest puts l in ch, in place of a value the reader has not taken yet.
func latest(ch chan Leader, l Leader) {
	for {
		select {
		case ch <- l:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
