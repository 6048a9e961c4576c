package redlock

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/quorumlock/redlock/redlock/locktrace"
)

// WithObserver has the Client report to o what it does (see locktrace.Observer). A later WithObserver
// replaces an earlier one. Default: none, and then the reports cost nothing.
func WithObserver(o locktrace.Observer) Option {
	return func(opts *options) error {
		opts.observer = o
		return nil
	}
}

// The reports, each a no-op without its hook.

// begin reports a call of op on s; the call goes on with the returned ctx and call.
func (c *Client) begin(ctx context.Context, op locktrace.Op, s *spec) (context.Context, locktrace.Call) {
	if c.opts.observer.Begin == nil && c.opts.observer.End == nil && c.opts.observer.Waiting == nil && c.opts.observer.Waited == nil {
		return ctx, locktrace.Call{}
	}
	call := locktrace.Call{Op: op, Kind: s.kind, Key: s.key, Quorum: s.need, Start: c.opts.clock.Now()}
	if c.opts.observer.Begin != nil {
		if octx := c.opts.observer.Begin(ctx, call); octx != nil {
			ctx = octx
		}
	}
	return ctx, call
}

// end reports that call returned err; ctx is the caller's.
func (c *Client) end(ctx context.Context, call locktrace.Call, err error) {
	if c.opts.observer.End != nil {
		c.opts.observer.End(ctx, call, locktrace.Return{Outcome: outcome(ctx, err), Err: err, Elapsed: c.opts.clock.Now().Sub(call.Start)})
	}
}

// outcome classifies a call's or a round's error.
func outcome(ctx context.Context, err error) locktrace.Outcome {
	switch {
	case err == nil:
		return locktrace.OutcomeOK
	case errors.Is(err, ErrClosed):
		return locktrace.OutcomeError
	case ctx.Err() != nil:
		return locktrace.OutcomeCanceled
	case errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNoQuorum):
		return locktrace.OutcomeRefused
	}
	return locktrace.OutcomeError
}

// decided reports a round decided with votes yes, elapsed after it began, that ended in err.
// A round that began only for this report takes its start from began, and its elapsed time
// from since.
func (c *Client) decided(ctx context.Context, votes int, elapsed time.Duration, err error) {
	if c.opts.observer.Round != nil {
		c.opts.observer.Round(ctx, locktrace.Round{Outcome: outcome(ctx, err), Votes: votes, Elapsed: elapsed})
	}
}

// since returns the time elapsed from start, from began, for decided: zero when there is no
// Round hook to read it.
func (c *Client) since(start time.Time) time.Duration {
	if c.opts.observer.Round == nil {
		return 0
	}
	return c.opts.clock.Now().Sub(start)
}

// waiting reports that an acquiring call begins to wait, and waited that it stops.
func (c *Client) waiting(ctx context.Context, call locktrace.Call) {
	if c.opts.observer.Waiting != nil {
		c.opts.observer.Waiting(ctx, call)
	}
}

func (c *Client) waited(ctx context.Context, call locktrace.Call) {
	if c.opts.observer.Waited != nil {
		c.opts.observer.Waited(ctx, call)
	}
}

// sent returns when a node call begins, for replied: the zero time when no NodeReply hook
// reads it, so that a call without an Observer costs no reading of the clock.
func (c *Client) sent() time.Time {
	if c.opts.observer.NodeReply == nil {
		return time.Time{}
	}
	return c.opts.clock.Now()
}

// began returns when a round that only the Round hook times begins, for decided: the zero
// time when there is no such hook.
func (c *Client) began() time.Time {
	if c.opts.observer.Round == nil {
		return time.Time{}
	}
	return c.opts.clock.Now()
}

// replied reports node's reply to op, sent at start (see sent).
func (c *Client) replied(ctx context.Context, node int, op locktrace.NodeOp, start time.Time, err error) {
	if c.opts.observer.NodeReply == nil {
		return
	}
	o := locktrace.NodeOK
	var ne net.Error
	switch {
	case err == nil:
	case errors.Is(err, errTaken) || errors.Is(err, errNotOwner):
		o = locktrace.NodeTaken
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.As(err, &ne) && ne.Timeout():
		o = locktrace.NodeTimeout
	default:
		o = locktrace.NodeFailed
	}
	c.opts.observer.NodeReply(ctx, locktrace.NodeReply{Node: node, Op: op, Outcome: o, Err: err, Elapsed: c.opts.clock.Now().Sub(start)})
}

// reportEnd reports that l ended now: lost unless released within its validity. l.mu is held.
func (l *Lock) reportEnd() {
	if f := l.c.opts.observer.Ended; f != nil {
		now := l.c.opts.clock.Now()
		f(locktrace.Holding{Kind: l.spec.kind, Held: now.Sub(l.acquired), Lost: errors.Is(l.life.why, ErrNotHeld) || !now.Before(l.life.until)})
	}
}
