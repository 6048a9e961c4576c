package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A round is one command sent to every node at once, decided at a quorum.
type round[T any] struct {
	c      *Client
	op     locktrace.NodeOp
	cmd    command
	decode func(reply any) (T, error) // errTaken or errNotOwner for a node's clear no
	wait   time.Duration              // how long to wait for the decision
	need   int
	// hold, when longer than wait, is how long each call may take to be sent and answered:
	// a release must reach its node even when a queue or a slow node delays it past the
	// decision (a dropped reply or a deadline is not a no, and the key would stay for its ttl).
	hold time.Duration
	// stop, when not nil, ends the wait early: the Client's done, for the rounds that a
	// closing Client need not finish (an attempt, a read). The nodes still pending count as
	// failed.
	stop <-chan time.Time
}

// ask runs the round under ctx and returns its decision: need nodes said yes, so many said no
// or failed that need is out of reach, or wait passed (or ctx ended). The caller hands the
// replies still in flight on with rest, once.
//
// Each node is called from a goroutine that Close does not wait for: the caller stops waiting
// at the deadline, whatever the node does, and a call that its client does not end by then
// (go-redis bounds a call by its own timeouts, not by the context) ends later, on its own.
func (r round[T]) ask(ctx context.Context) *asked[T] {
	c := r.c
	callCtx, cancel := context.WithTimeout(ctx, max(r.wait, r.hold))
	q := quorum.Start(callCtx, c.life.calls, len(c.nodes), r.call)
	return &asked[T]{Outcome: r.decide(callCtx, q), c: c, q: q, cancel: cancel}
}

// decide is q's decision at r.need, within r.wait (of real time, as the calls' deadlines) and
// while ctx, the calls' context, lives.
func (r round[T]) decide(ctx context.Context, q *quorum.Round[T]) quorum.Outcome[T] {
	if r.hold <= r.wait { // ctx ends at the wait
		return q.Decide(r.need, ctx.Done(), r.stop)
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	return q.Decide(r.need, ctx.Done(), t.C)
}

// asked is a round that has been decided, with its replies still in flight.
type asked[T any] struct {
	quorum.Outcome[T]
	c      *Client
	q      *quorum.Round[T]
	cancel context.CancelFunc
}

// linger reads the replies still in flight into the outcome for at most d, and not once ctx
// ended: the call that asked returns by its deadline.
//
// The end of d closes a channel from a timer's function rather than being a timer's channel: a
// reply (one that the calls' deadline ends, say) can wake Linger at the very moment d ends, in
// virtual time at the same instant, and Linger would then receive from a timer that went off
// while nobody waited on it. That runs the timer's send on this goroutine, which inside a
// testing/synctest bubble built with -race can crash the process (see internal/workers' work).
func (a *asked[T]) linger(ctx context.Context, c *Client, d time.Duration) {
	over := make(chan time.Time)
	t := c.opts.clock.AfterFunc(d, func() { close(over) })
	a.q.Linger(&a.Outcome, ctx.Done(), over)
	t.Stop()
}

// rest hands the replies still in flight to late (when not nil) as they come, on a worker of
// the Client that Close waits for, until Close.
func (a *asked[T]) rest(late func(quorum.Reply[T])) {
	if len(a.Pending) == 0 {
		a.cancel()
		return
	}
	a.c.life.bg.Add(1) // not bg.Go: its wrapper would cost another allocation a round
	a.c.life.calls.Go(func() { a.collect(late) })
}

// collect is rest's goroutine.
func (a *asked[T]) collect(late func(quorum.Reply[T])) {
	defer a.c.life.bg.Done()
	defer a.cancel()
	if late == nil {
		late = func(quorum.Reply[T]) {}
	}
	a.q.Rest(a.c.life.ctx.Done(), late)
}

// call sends the round's command to node i and reads its reply, reporting it to the Observer.
func (r round[T]) call(ctx context.Context, i int) (T, error) {
	c := r.c
	start := c.sent()
	var v T
	reply, err := c.send(ctx, i, r.cmd)
	if err == nil {
		v, err = r.decode(reply)
	} else {
		err = redact(err, secrets(r.cmd)...)
	}
	c.replied(ctx, i, r.op, start, err)
	return v, err
}

// send sends cmd to node i.
func (c *Client) send(ctx context.Context, i int, cmd command) (any, error) {
	if s, ok := c.nodes[i].(driver.Sender); ok {
		return s.Send(ctx, cmd)
	}
	if cmd.Script == nil {
		return c.nodes[i].SetNX(ctx, cmd.Keys[0], cmd.Args[0], cmd.TTL)
	}
	return c.nodes[i].Eval(ctx, cmd.Script, cmd.Keys, cmd.Args)
}

// decodeGrant reads an acquisition's reply: SET NX's or an acquiring script's.
func decodeGrant(reply any) (wire.Grant, error) {
	if set, ok := reply.(bool); ok {
		if !set {
			return wire.Grant{Ahead: -1, Left: -1}, errTaken
		}
		return wire.Grant{Ahead: -1, Left: -1}, nil
	}
	granted, g, err := wire.DecodeGrant(reply)
	if err == nil && !granted {
		err = errTaken
	}
	return g, err
}

// decodeHeld reads the reply of a release, an extension or fencing's second round.
func decodeHeld(reply any) (struct{}, error) {
	held, err := wire.DecodeHeld(reply)
	if err == nil && !held {
		err = errNotOwner
	}
	return struct{}{}, err
}

// noes counts the replies in out that are a node's clear no (errTaken or errNotOwner).
func noes[T any](out quorum.Outcome[T], except []int) int {
	n := 0
	for _, rep := range out.Replies {
		if (errors.Is(rep.Err, errNotOwner) || errors.Is(rep.Err, errTaken)) && !contains(except, rep.Node) {
			n++
		}
	}
	return n
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// votes counts the nodes that said yes in out.
func votes[T any](out quorum.Outcome[T]) int {
	n := 0
	for _, rep := range out.Replies {
		if rep.Err == nil {
			n++
		}
	}
	return n
}

// nodeErrors describes every node that did not succeed in out; wait is how long the round
// waited.
func nodeErrors[T any](c *Client, ctx context.Context, out quorum.Outcome[T], wait time.Duration) []error {
	var errs []error
	for _, rep := range out.Replies {
		if rep.Err != nil {
			errs = append(errs, &NodeError{Node: rep.Node, Addr: c.addrs[rep.Node], Err: rep.Err})
		}
	}
	for _, i := range out.Pending {
		err := ctx.Err()
		switch {
		case err != nil:
		case out.Stopped:
			err = fmt.Errorf("no reply within %v", wait)
		default:
			err = errors.New("no reply before the others decided")
		}
		errs = append(errs, &NodeError{Node: i, Addr: c.addrs[i], Err: err})
	}
	return errs
}

// release sends cmd, a release, to node i and returns its answer, after the caller may have
// given up: it ignores ctx's cancellation. The call may take hold (the lock's ttl, beyond
// which the key is gone anyway) to be sent and answered; Close stops waiting for it. Like
// ask's calls, it runs on a goroutine of its own that nobody waits for past its deadline.
func (c *Client) release(ctx context.Context, i int, cmd command, hold time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(hold, c.opts.nodeTimeout))
	defer cancel()
	r := round[struct{}]{c: c, op: locktrace.NodeRelease, cmd: cmd, decode: decodeHeld}
	replied := make(chan error, 1)
	go func() { _, err := r.call(ctx, i); replied <- err }()
	select {
	case err := <-replied:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.ctx.Done():
		return ErrClosed
	}
}

// undo sends cmd, a roll-back, to node i in a goroutine of the Client (see release), and calls
// then once it has been answered (or given up).
func (c *Client) undo(ctx context.Context, i int, cmd command, hold time.Duration, then func() bool) {
	c.life.bg.Go(func() {
		defer then()
		if err := c.release(ctx, i, cmd, hold); err != nil && !errors.Is(err, errNotOwner) {
			c.opts.log.WarnContext(ctx, "redlock: roll-back failed; the key expires with its ttl", "node", i, "err", err)
		}
	})
}
