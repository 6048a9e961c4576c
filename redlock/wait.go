package redlock

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/quorumlock/redlock/clock"
)

// lock checks s's key and ttl, then acquires what s says, waiting: the Lock of every primitive.
func (c *Client) lock(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	ctx, call := c.begin(ctx, OpLock, s)
	l, err := c.acquire(ctx, s, ttl, call)
	c.end(ctx, call, err)
	return l, err
}

// try checks s's key and ttl, then makes one attempt to acquire what s says: the TryLock of
// every primitive.
func (c *Client) try(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	ctx, call := c.begin(ctx, OpTryLock, s)
	err := c.check(s.key, ttl)
	var l *Lock
	if err == nil {
		var a attemptResult
		l, a = c.attempt(ctx, s, ttl, nil, false)
		err = a.err
	}
	c.end(ctx, call, err)
	return l, err
}

// acquire checks s's key and ttl, then acquires what s says for ttl, retrying until it
// succeeds, ctx is done or the Client is closed: the waiting of every Lock-like call (see
// Client.Lock for how it waits). call is what was reported of it.
func (c *Client) acquire(ctx context.Context, s *spec, ttl time.Duration, call Call) (*Lock, error) {
	if err := c.check(s.key, ttl); err != nil {
		return nil, err
	}
	// What this Client waited for lately is likely to have waiters in other processes: then
	// even the first attempt is made as a waiter that does not cut ahead of them, and one that
	// listens for releases already, so that a release after the attempt is heard.
	var w *waiter
	heard := false // w listened while its last attempt was made
	busy, polite := c.queue.state(s.stored, c.clock.Now())
	if polite {
		w = c.newWaiter(s, ttl)
		if c.wake.join(w) == nil {
			return nil, errors.Join(ErrNotAcquired, ErrClosed)
		}
		defer c.wake.leave(w)
		select {
		case <-w.ready:
			heard = true
		default: // the Client's first wait: its subscriptions are being made
		}
	}
	a := attemptResult{err: ErrNotAcquired}
	if !busy { // else this Client's waiters came first: queue behind them
		var l *Lock
		l, a = c.attempt(ctx, s, ttl, w, polite)
		if l != nil || ctx.Err() != nil || errors.Is(a.err, ErrClosed) {
			if l == nil && w != nil {
				c.abandon(ctx, s, w)
			}
			return l, a.err
		}
	} else {
		// Its turn comes from a waiter of this Client, which may still head the queue while
		// its release is in flight: a polite attempt would wait behind it for nothing.
		polite, heard = false, false
	}
	c.waiting(ctx, call, true)
	l, err := c.wait(ctx, s, ttl, w, polite, heard, a)
	c.waiting(ctx, call, false)
	return l, err
}

// wait is acquire after a failed attempt a: take this Client's turn for s, listen for releases
// and try again when one is heard, or when the timer says so. w is the waiter of the attempts
// so far, if any; heard, that it listened while a was made, so that a release since is heard.
func (c *Client) wait(ctx context.Context, s *spec, ttl time.Duration, w *waiter, polite, heard bool, a attemptResult) (l *Lock, err error) {
	defer func() {
		if err != nil && w != nil {
			c.abandon(ctx, s, w)
		}
	}()
	won, err := c.queue.take(ctx, s.stored, c.done)
	if err != nil {
		return nil, errors.Join(a.err, err)
	}
	defer func() { c.queue.give(s.stored, l != nil) }()
	defer func() { c.queue.mark(s.stored, c.clock.Now().Add(ttl)) }()
	if w == nil {
		w = c.newWaiter(s, ttl)
		if c.wake.join(w) == nil {
			return nil, errors.Join(a.err, ErrClosed)
		}
		defer c.wake.leave(w)
	}
	if !heard {
		if err := c.await(ctx, w.ready, c.nodeTimeout); err != nil {
			return nil, errors.Join(a.err, err)
		}
	}
	if won {
		// The last turn acquired the key: this Client's waiters take turns behind each other,
		// and its Unlock, likely imminent, races this waiter's attempts on the nodes. Handed
		// over on some nodes and taken by an attempt on the others, the waiter would hold
		// neither a quorum: it is woken by the Unlock instead, and tries again.
		c.wake.wakeOnly(w)
	}
	how, splits := "queued", 0
	for try := !heard; ; try = true {
		if try {
			// Listening now, so a release after this attempt is heard. Only a waiter woken
			// by its name or by the timer takes the key ahead of others in the queue.
			var l *Lock
			l, a = c.attempt(ctx, s, ttl, w, polite && how == "queued")
			if l != nil {
				c.log.DebugContext(ctx, "redlock: acquired", "kind", s.name, "key", s.key, "after", how)
				return l, nil
			}
			if ctx.Err() != nil || errors.Is(a.err, ErrClosed) {
				return nil, a.err
			}
		}
		delay := c.retryDelay()
		how = "timer"
		if a.votes > 0 || splits > 0 {
			// A split vote, now or in this episode: nobody may hold the key once everyone's
			// roll-back lands, and roll-backs are not announced. Retry after a pause that is
			// shorter the more nodes this attempt won, in units of its duration, doubling while
			// the episode lasts (so a holder of a bare quorum is not polled fast).
			unit := max(a.elapsed, minSplitUnit)
			split := time.Duration(max(s.need-a.votes, 0))*unit + time.Duration(mrand.Int64N(int64(unit)+1))
			if split <<= min(splits, 20); split < delay {
				delay, how = split, "split vote"
			}
			splits++
		}
		t := c.clock.NewTimer(delay)
	listen:
		for {
			select {
			case <-t.C:
				break listen
			case <-w.wake:
				l, more := c.handedOver(ctx, s, w, ttl)
				if l != nil {
					t.Stop()
					c.log.DebugContext(ctx, "redlock: acquired", "kind", s.name, "key", s.key, "after", "hand-over")
					return l, nil
				}
				if more {
					continue // the other nodes' hand-overs are on their way; else the timer
				}
				t.Stop()
				how, splits = "release announced", 0
				break listen
			case <-ctx.Done():
				t.Stop()
				return nil, errors.Join(a.err, ctx.Err())
			case <-c.done:
				t.Stop()
				return nil, errors.Join(a.err, ErrClosed)
			}
		}
	}
}

// handedOver returns the lock when a quorum of nodes handed s's key to w's name, as a Lock
// with that name for its token. Its validity counts from the attempt that sent the name, since
// every node handed the key over after that, for ttl; when that leaves less than 3/4 of the
// ttl, it returns nil so that an attempt takes the key over with a validity from now. Else it
// reports whether to wait for more hand-overs rather than try now: when some nodes handed the
// key over and no release that handed nothing over woke w.
func (c *Client) handedOver(ctx context.Context, s *spec, w *waiter, ttl time.Duration) (*Lock, bool) {
	name, since, handed, freed := c.wake.handed(w)
	if handed < s.need {
		return nil, handed > 0 && !freed
	}
	now := c.clock.Now()
	if now.Sub(since) > ttl/4 {
		return nil, false
	}
	l := &Lock{c: c, spec: *s, token: name, acquired: now, until: clock.Deadline(since, ttl, c.driftFactor)}
	l.relArgs = []any{name, c.announce, name}
	if c.observer != nil {
		c.observer.Round(ctx, Round{Outcome: OutcomeOK, Votes: handed, Elapsed: now.Sub(since)})
	}
	return l, false
}

// minSplitUnit is the least pause unit after a split vote, and the least time a failed attempt
// lingers for its last replies: an attempt can take no measurable time (in-memory nodes, or a
// virtual clock), and a zero pause would spin without yielding.
const minSplitUnit = 100 * time.Microsecond

// await waits until ready is closed, at most d, ctx and Close permitting.
func (c *Client) await(ctx context.Context, ready <-chan struct{}, d time.Duration) error {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
	return nil
}

func (c *Client) retryDelay() time.Duration {
	return c.retryMin + mrand.N(c.retryMax-c.retryMin+1)
}
