package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// Orphan ends the lock without releasing it: the Client stops keeping it (KeepAlive) and
// forgets it, so that Close leaves it too, and its keys expire on the nodes with their ttl.
// Lost closes and Err returns nil, as after Unlock; a later Unlock or Extend returns an error
// wrapping ErrNotHeld. Use it for a lock that must outlive its holder's work: a form's
// submission that must count once, a mark that a scheduled job ran for this tick.
//
// Before it returns, Orphan sets the lock, with its token and what is left of its ttl, on the
// nodes that do not hold it: a node where a contender's refused attempt stood when the lock was
// taken (once that attempt's roll-back has landed), or one whose reply came late. So a lock
// won against concurrent contenders ends on every node that answers, not on a bare majority,
// and outlives a node that comes back empty as a lock taken alone does. That takes at most
// twice the node timeout, less when ctx ends or the Client closes first.
//
// It returns nil once the lock is orphaned. It returns an error when the lock had ended, and
// then orphans nothing: wrapping ErrClosed when Close released it, ErrNotHeld when Unlock or an
// earlier Orphan ended it or its validity passed. So a holder that records work under the lock
// only once Orphan returned nil never records it for a lock that Close deleted meanwhile. It
// returns an error wrapping ErrNotHeld, too, when so many nodes hold another's key that no
// quorum holds the lock: it was lost.
func (l *Lock) Orphan(ctx context.Context) error {
	if l == nil {
		return errNilLock
	}
	if l.reentered() != nil {
		return l.leave() // a re-entry's handle counts down
	}
	left, err := l.detach()
	if err != nil {
		return err
	}
	return l.spread(ctx, left)
}

// detach ends the lock as Orphan does and returns how long its keys have left on the nodes at
// most, or why it cannot: the lock has ended.
func (l *Lock) detach() (time.Duration, error) {
	c := l.c
	l.mu.Lock()
	defer l.mu.Unlock()
	now := c.opts.clock.Now()
	if !l.life.ended && !now.Before(l.life.until) {
		l.endLocked(l.expired())
	}
	switch {
	case errors.Is(l.life.why, ErrClosed):
		return 0, fmt.Errorf("%w: Close released the lock", ErrClosed)
	case l.life.why != nil:
		return 0, l.life.why
	case l.life.ended:
		return 0, fmt.Errorf("%w: released or orphaned already", ErrNotHeld)
	}
	l.life.released = true
	l.endLocked(nil)
	// The keys were sent after the validity's start, for ttl: they last at least until its
	// end and the drift past it.
	return l.life.until.Sub(now) + clock.Drift(l.life.ttl, c.opts.driftFactor), nil
}

// spread sets the lock on the nodes that do not hold it, with its token, for left (see
// Orphan), and reports it lost when so many nodes hold another's key that no quorum holds it.
func (l *Lock) spread(ctx context.Context, left time.Duration) error {
	c := l.c
	left = left.Truncate(time.Millisecond)
	if left <= 0 || c.enter() != nil {
		return nil // nothing to add to: the keys expire now, or Close has begun
	}
	defer c.leave()
	ctx, cancel := context.WithTimeout(ctx, satMul(c.opts.nodeTimeout, 2))
	defer cancel()
	s := settling{
		holds:  round[struct{}]{c: c, op: locktrace.NodeExtend, cmd: l.spec.ops.extend(l.token, left), decode: decodeHeld},
		claims: round[wire.Grant]{c: c, op: locktrace.NodeAcquire, cmd: l.spec.ops.claim(l.token, left), decode: decodeGrant},
	}
	out := quorum.Start(ctx, nil, len(c.nodes), s.settle).Gather(ctx.Done(), c.life.done)
	if noes(out, nil) > len(c.nodes)-l.spec.need {
		return errors.Join(fmt.Errorf("%w: Orphan found it held by another on so many nodes that no quorum holds it", ErrNotHeld),
			errors.Join(nodeErrors(c, ctx, out, satMul(c.opts.nodeTimeout, 2))...))
	}
	return nil
}

// settling is what spread sends each node: the lock's renewal, and its claim.
type settling struct {
	holds  round[struct{}]
	claims round[wire.Grant]
}

// settle makes node i hold the lock: it does when the renewal finds it there; else the claim
// sets it, tried again while the node has no room for it (a refused attempt whose roll-back is
// on its way holds a permit), until ctx ends.
func (s settling) settle(ctx context.Context, i int) (struct{}, error) {
	c := s.holds.c
	pause := time.Millisecond
	for {
		_, err := callWithin(ctx, c.opts.nodeTimeout, i, s.holds.call)
		if errors.Is(err, errNotOwner) {
			_, err = callWithin(ctx, c.opts.nodeTimeout, i, s.claims.call)
		}
		if !errors.Is(err, errTaken) {
			return struct{}{}, err
		}
		t := c.opts.clock.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return struct{}{}, err
		case <-c.life.done:
			t.Stop()
			return struct{}{}, err
		}
		pause = min(2*pause, c.opts.nodeTimeout/4)
	}
}

// callWithin calls call for node i, within d of ctx.
func callWithin[T any](ctx context.Context, d time.Duration, i int, call func(context.Context, int) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return call(ctx, i)
}
