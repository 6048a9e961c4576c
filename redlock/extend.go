package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// Extend gives the lock a new ttl from now, on every node where it still holds this lock's
// token. It succeeds only when a quorum did so within the new validity, before the lock ended;
// then Until moves. Otherwise it returns an error wrapping ErrNotHeld when so many nodes said
// the key is not this lock's that no quorum holds it (the lock ends at once: Lost closes), or
// ErrNoQuorum when too few answered to tell; either wraps a *NodeError for each node that
// failed. A lock that ended is not extended: acquire it again.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return errNilLock
	}
	c := l.c
	ctx, call := c.begin(ctx, locktrace.OpExtend, l.spec)
	err := l.extend(ctx, ttl)
	c.end(ctx, call, err)
	return err
}

func (l *Lock) extend(ctx context.Context, ttl time.Duration) error {
	if l.reentered() != nil {
		return l.extendOuter(ctx, ttl)
	}
	c := l.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()
	start := c.opts.clock.Now()
	if l.endedAt(start) {
		if why := l.Err(); why != nil {
			return why
		}
		return fmt.Errorf("%w: it was released", ErrNotHeld)
	}
	until, err := c.renew(ctx, l.spec, l.token, ttl, start, l.pendingNodes)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil && !l.life.ended:
		l.life.until, l.life.ttl = until, ttl
		return nil
	case err == nil:
		return fmt.Errorf("%w: it ended while being extended", ErrNotHeld)
	case errors.Is(err, ErrNotHeld):
		l.endLocked(err) // lost now, not at Until
	}
	return err
}

// renew runs s's extend command for token on every node from start and returns the new
// validity's end when a quorum renewed it within it; else an error wrapping ErrNotHeld when
// so many nodes said no that no quorum holds it, or ErrNoQuorum. A no from a node that pending
// (nil for none) returns once the round is decided does not count: the node's acquisition may
// not have landed yet.
func (c *Client) renew(ctx context.Context, s *spec, token string, ttl time.Duration, start time.Time, pending func() []int) (time.Time, error) {
	until := clock.Deadline(start, ttl, c.opts.driftFactor)
	rd := round[struct{}]{c: c, op: locktrace.NodeExtend, cmd: s.ops.extend(token, ttl), decode: decodeHeld,
		wait: min(c.opts.nodeTimeout, until.Sub(start)), need: s.need}
	out := rd.ask(ctx)
	out.rest(nil)
	now := c.opts.clock.Now()
	if out.Quorum && now.Before(until) {
		c.decided(ctx, votes(out.Outcome), now.Sub(start), nil)
		return until, nil
	}
	var late []int
	if pending != nil {
		late = pending()
	}
	err := c.verdict(ctx, s, out.Outcome, late, rd.wait)
	if out.Quorum {
		err = fmt.Errorf("%w: a quorum renewed it after %v, past the new validity", ErrNoQuorum, now.Sub(start))
	}
	c.decided(ctx, votes(out.Outcome), now.Sub(start), err)
	return until, err
}

// verdict says why a round of s that is not ours to decide failed: ErrNotHeld when so many
// nodes said no (pending's noes aside) that no quorum holds the lock, else ErrNoQuorum; with
// every node's error.
func (c *Client) verdict(ctx context.Context, s *spec, out quorum.Outcome[struct{}], pending []int, wait time.Duration) error {
	sentinel := ErrNoQuorum
	if noes(out, pending) > len(c.nodes)-s.need {
		sentinel = ErrNotHeld
	}
	errs := []error{sentinel, ctx.Err()}
	return errors.Join(append(errs, nodeErrors(c, ctx, out, wait)...)...)
}

func (l *Lock) pendingNodes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.flight.pending)
}
