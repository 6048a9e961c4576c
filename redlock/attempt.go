package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// try makes one attempt: the acquiring command on every node at once, a decision at the
// spec's quorum within the validity, and the roll-back of every node that may hold it when the
// decision is no.
func (k *contender) try(ctx context.Context) (*Lock, result) {
	c := k.c
	if err := c.enter(); err != nil {
		r := result{err: errors.Join(ErrNotAcquired, err)}
		c.decided(ctx, 0, 0, r.err)
		return nil, r
	}
	defer c.leave()
	a := attempt{token: wire.Token(newToken(), k.s.multi, c.opts.owner), ttl: k.ttl}
	if k.w != nil {
		a.waiter, a.place, a.lease = k.w.name, k.place, c.lease()
		c.listener.forget(k.w)
	}
	start := c.opts.clock.Now()
	until := clock.Deadline(start, k.ttl, c.opts.driftFactor)
	rd := round[wire.Grant]{c: c, op: locktrace.NodeAcquire, cmd: k.s.ops.acquire(a), decode: decodeGrant,
		wait: min(c.opts.nodeTimeout, until.Sub(start)), need: k.s.need, stop: c.life.done}
	out := rd.ask(ctx)
	l, err := k.grant(ctx, a, out, start, until)
	if l != nil {
		if k.w == nil {
			out.rest(l.late)
			return l, result{}
		}
		for _, rep := range out.Replies {
			k.leaveRefuser(ctx, rep)
		}
		out.rest(func(rep quorum.Reply[wire.Grant]) { k.leaveRefuser(ctx, rep); l.late(rep) })
		return l, result{}
	}
	if k.w != nil && len(out.Pending) > 0 && ctx.Err() == nil && !closed(c.life.done) {
		// Count the votes still in flight, at most as long again, for a true count.
		out.linger(ctx, c, max(c.opts.clock.Now().Sub(start), minSplitUnit))
	}
	settled := k.rollback(ctx, a, out)
	r := result{settled: settled, err: errors.Join(append([]error{ErrNotAcquired, err}, nodeErrors(c, ctx, out.Outcome, rd.wait)...)...),
		votes: votes(out.Outcome), elapsed: c.opts.clock.Now().Sub(start), ahead: ahead(out.Outcome),
		expiry: expiry(out.Outcome, k.s.need)}
	c.opts.log.DebugContext(ctx, "redlock: not acquired", "kind", k.s.kind, "key", k.s.key, "votes", r.votes, "err", r.err)
	c.decided(ctx, r.votes, r.elapsed, r.err)
	return nil, r
}

// leaveRefuser takes the waiter out of the line of the node of rep when it refused the attempt
// the waiter won and said the waiter is in line there (a mutex's or an election's line; a
// writer's refusal puts it in none): the attempt renewed the waiter's place there, and a
// release that reached that node later would hand the key to the waiter, which holds the lock
// already, for a lease, unless the lock's own Unlock passed it on (a lock that another Client
// resumed under its token never does). Sent in a goroutine of the Client, waiting at most the node
// timeout.
func (k *contender) leaveRefuser(ctx context.Context, rep quorum.Reply[wire.Grant]) {
	c, w := k.c, k.w
	if !w.ok || !errors.Is(rep.Err, errTaken) || rep.Value.Ahead < 0 {
		return
	}
	c.life.bg.Go(func() {
		if err := c.release(ctx, rep.Node, w.abandon, 0); err != nil && !errors.Is(err, errNotOwner) {
			c.opts.log.WarnContext(ctx, "redlock: leaving the line failed; the place goes when the line reaches it", "node", rep.Node, "err", err)
		}
	})
}

// grant returns the Lock when out reached the quorum within the validity (and, with fencing,
// so did its second round), else nil and why (nil for a plain refusal).
func (k *contender) grant(ctx context.Context, a attempt, out *asked[wire.Grant], start, until time.Time) (*Lock, error) {
	c := k.c
	now := c.opts.clock.Now()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case out.Stopped && closed(c.life.done):
		return nil, ErrClosed
	case !out.Quorum:
		return nil, nil
	case !now.Before(until):
		return nil, fmt.Errorf("redlock: quorum reached after %v, past the validity", now.Sub(start))
	}
	var fence uint64
	if k.s.fence != nil {
		var err error
		if fence, err = k.fence(ctx, a.token, out.Replies, until); err != nil {
			return nil, err
		}
		now = c.opts.clock.Now()
	}
	l := &Lock{c: c, spec: k.s, token: a.token, waiter: a.waiter, fence: fence, acquired: now,
		life: lifetime{until: until, ttl: k.ttl}, flight: inFlight{pending: out.Pending}}
	c.track(l)
	c.decided(ctx, votes(out.Outcome), now.Sub(start), nil)
	return l, nil
}

// rollback releases the failed attempt a wherever it may have landed: every node but those
// that clearly refused. A node whose call has not returned yet is released once it has (so
// that the release does not overtake the acquisition), whatever it returned but a clear no:
// a reply lost on the way, which the client ends with a timeout, is not a no.
//
// It returns a channel closed once no more releases are unanswered than nodes the key can do
// without (all of them but a quorum): from then on the attempt's own keys cannot stand in the
// way of a quorum for the next attempt, while a slow node is not waited for. It returns nil
// when no more were sent.
//
// A node that said yes makes it a split vote: the Client's next Lock of the key then takes its
// place in line from its first attempt, rather than split the vote again.
func (k *contender) rollback(ctx context.Context, a attempt, out *asked[wire.Grant]) <-chan struct{} {
	c := k.c
	cmd := k.s.ops.rollback(a, c.self.channel)
	sent := len(out.Pending) // every node still to answer may have set the key
	for _, rep := range out.Replies {
		if !errors.Is(rep.Err, errTaken) {
			sent++
		}
	}
	left := newCountdown(sent, max(0, len(c.nodes)-k.s.need))
	undo := func(rep quorum.Reply[wire.Grant]) {
		if rep.Err == nil {
			c.recent.mark(k.s.wake[0], c.opts.clock.Now().Add(k.ttl))
		}
		c.undo(ctx, rep.Node, cmd, a.ttl, left.done)
	}
	for _, rep := range out.Replies {
		if !errors.Is(rep.Err, errTaken) {
			undo(rep)
		}
	}
	out.rest(func(rep quorum.Reply[wire.Grant]) {
		if errors.Is(rep.Err, errTaken) {
			left.done() // a late no: nothing to release there
			return
		}
		undo(rep)
	})
	if sent <= left.slack {
		return nil
	}
	return left.zero
}

// A countdown closes zero once no more than slack of the calls it counts are left.
type countdown struct {
	mu    sync.Mutex
	n     int
	slack int
	zero  chan struct{}
}

func newCountdown(n, slack int) *countdown {
	return &countdown{n: n, slack: slack, zero: make(chan struct{})}
}

// done counts one call down and reports whether that closed zero.
func (d *countdown) done() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	if d.n == d.slack {
		close(d.zero)
		return true
	}
	return false
}
