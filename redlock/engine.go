package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// A kind is what one sort of lock runs on a node: the mutex, the semaphore, the read and the
// write side of the RWMutex, the multi-key lock. Its scripts follow one convention, so that the
// engine calls them all alike:
//
//   - acquire: KEYS the spec's acqKeys; ARGV the token, the ttl in ms, the waiter's name ("" for
//     none), its score, polite ("1" or ""), its previous name ("" for none), then the spec's extra. Returns {0} when the node refused,
//     {1} when it granted (with fencing {1, counter, seconds, microseconds}).
//   - extend: KEYS the spec's extKeys; ARGV the token and the new ttl in ms. Returns 1 when
//     extended, 0 when not held under the token.
//   - release: KEYS the spec's relKeys; ARGV the token, the channel to announce the release on
//     ("" for none: a roll-back) and the name of the waiter that acquired (may be absent); a
//     queued kind's roll-back passes the channel, "" and "1" (quiet: see release.lua).
//     Returns 1 when it was held under the token, else 0.
//   - abandon, when set: KEYS the spec's acqKeys; ARGV the waiter's name, the channel and the
//     name again. Run on every node when a waiting call gives up, to undo what its attempts left
//     there for others.
type kind struct {
	name  string // in logs
	label Kind   // in an Observer's reports
	// plain: an attempt without a waiter is SET NX PX of the stored key, no script (the mutex).
	plain bool
	// queued: a refused waiter joins the key's queue on the nodes, releases name its head, and
	// a polite attempt defers to it (the mutex).
	queued bool
	fenced bool // fencing's two rounds (the mutex WithFencing)
	// suffix ends every token of this kind, so that Resume tells them from the mutex's.
	suffix                            string
	acquire, extend, release, abandon *redis.Script
}

// A spec is what one call acquires, fixed for all its attempts: a kind, its quorum and its
// keys. It is the engine's only input beside the ttl, so that every primitive shares the
// fan-out, decision, roll-back, wake-up, extension and release.
type spec struct {
	*kind
	need   int      // nodes that must say yes
	key    string   // the first key, as given
	keys   []string // every key as given, when there are several (LockAll); else nil
	stored string   // the name whose release wakes a waiter, and the Client's turn for waiters
	more   []string // more names whose release wakes a waiter (LockAll's other keys)
	// The scripts' KEYS (see kind), and the acquire script's arguments after the engine's.
	acqKeys, extKeys, relKeys []string
	extra                     []any
}

// wakeKeys returns every name whose release wakes a waiter for s.
func (s *spec) wakeKeys() []string { return append([]string{s.stored}, s.more...) }

// An attemptResult tells how a failed attempt went.
type attemptResult struct {
	err     error
	votes   int           // nodes that said yes
	elapsed time.Duration // from the first send to the decision
}

// attempt is one acquisition: the acquire script (or SET NX PX) on every node at once, a
// decision at the spec's quorum, and the roll-back of every node that may hold it when the
// decision is no.
//
// A waiting call passes its waiter w: a queued kind's node that refuses then puts w in the
// key's queue, from which releases name the next contender. With w, a failed attempt also waits
// for the replies still in flight, at most as long again as the decision took, so that its vote
// count is true: a contender that won nodes it had not heard from yet would otherwise believe it
// won none and wait for an announcement that never comes. With polite, a node where another
// waiter heads the queue puts w in it rather than give it the key, even a free key.
func (c *Client) attempt(ctx context.Context, s *spec, ttl time.Duration, w *waiter, polite bool) (*Lock, attemptResult) {
	if err := c.enter(); err != nil {
		a := attemptResult{err: errors.Join(ErrNotAcquired, err)}
		decided(c, ctx, quorum.Outcome[grant]{}, 0, a.err)
		return nil, a
	}
	defer c.leave()
	token := newToken() + s.suffix
	var value any = token // boxed once, not once a node
	var name any = ""     // the waiter's, boxed once
	// The acquisition, the same for every node: SET NX PX, or the acquire script (then script).
	var script *redis.Script
	var cmd []any
	if s.plain && w == nil {
		cmd = []any{"set", s.stored, value, "px", ttl.Milliseconds(), "nx"}
	} else {
		script = s.acquire
		cmd = evalsha(script, s.acqKeys, value, strconv.FormatInt(ttl.Milliseconds(), 10), "", "", "", "")
		cmd = append(cmd, s.extra...)
		args := cmd[3+len(s.acqKeys):]
		if w != nil {
			name, args[5] = c.wake.sending(w, c.clock.Now())
			args[2], args[3] = name, w.score
		}
		if polite && s.queued {
			args[4] = "1"
		}
	}
	need := s.need

	start := c.clock.Now()
	until := clock.Deadline(start, ttl, c.driftFactor)
	wait := min(c.nodeTimeout, until.Sub(start))
	callCtx, cancel := context.WithTimeout(ctx, wait)
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), observed(c, NodeAcquire, func(ctx context.Context, i int) (grant, error) {
		return c.acquireOn(ctx, i, script, cmd)
	}))
	out := r.Decide(need, callCtx.Done(), nil)
	now := c.clock.Now()

	granted := out.Quorum && now.Before(until)
	var fence uint64
	var fenceErrs []error
	if granted && s.fenced {
		fence = fenceToken(out.Replies)
		granted, fenceErrs = c.fenceRound(ctx, need, s.acqKeys, token, fence, until)
		now = c.clock.Now()
		granted = granted && now.Before(until)
	}
	if granted {
		l := &Lock{c: c, spec: *s, token: token, fence: fence, acquired: now, until: until, pending: out.Pending, waited: w != nil}
		l.relCmd = evalsha(l.release, l.relKeys, value, c.announce, name)
		drain(c, r, out, cancel, func(rep quorum.Reply[grant]) { l.late(ctx, rep, ttl) })
		decided(c, ctx, out, now.Sub(start), nil)
		return l, attemptResult{}
	}

	elapsed := now.Sub(start)
	if w != nil && len(out.Pending) > 0 && ctx.Err() == nil {
		t := c.clock.NewTimer(max(elapsed, minSplitUnit))
		r.Linger(&out, t.C)
		t.Stop()
	}

	// Roll back: release wherever our acquisition may have landed, that is everywhere but the
	// nodes that clearly said no; a node still in flight is released once its reply is in.
	votes := 0
	// A mutex's roll-back hands the key over to the waiter first in its queue, if that one
	// takes hand-overs, but wakes nobody (release.lua): a woken waiter's attempt could fail and
	// roll back in turn, and wake the first again.
	undo := undo{script: s.release, cmd: evalsha(s.release, s.relKeys, value, "")}
	if s.queued && c.handsOver() {
		undo.cmd = evalsha(s.release, s.relKeys, value, c.announce, "", "1")
	}
	for _, rep := range out.Replies {
		if rep.Err == nil {
			votes++
		}
		if !errors.Is(rep.Err, errTaken) {
			c.bg.Go(func() { c.rollback(ctx, rep.Node, undo, ttl) })
		}
	}
	drain(c, r, out, cancel, func(rep quorum.Reply[grant]) {
		if !errors.Is(rep.Err, errTaken) {
			c.rollback(ctx, rep.Node, undo, ttl)
		}
	})

	errs := []error{ErrNotAcquired}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	switch {
	case fenceErrs != nil:
		errs = append(errs, errors.New("redlock: the fencing round reached no quorum within the validity"))
		errs = append(errs, fenceErrs...)
	case out.Quorum:
		errs = append(errs, fmt.Errorf("redlock: quorum reached after %v, past the validity", now.Sub(start)))
	}
	errs = append(errs, nodeErrors(c, ctx, out, wait)...)
	err := errors.Join(errs...)
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.DebugContext(ctx, "redlock: not acquired", "kind", s.name, "key", s.key, "votes", votes, "err", err)
	}
	decided(c, ctx, out, elapsed, err)
	return nil, attemptResult{err: err, votes: votes, elapsed: elapsed}
}

// A grant is one node's yes to an acquisition; with fencing, it carries that node's fencing
// counter and clock, read atomically with the SET.
type grant struct {
	counter uint64
	micros  uint64 // the node's TIME in microseconds
}

// acquireOn sends cmd to node i: SET NX PX when script is nil, else script's EVALSHA (see
// evalsha).
func (c *Client) acquireOn(ctx context.Context, i int, script *redis.Script, cmd []any) (grant, error) {
	if script == nil {
		set := redis.NewBoolCmd(ctx, cmd...)
		err := c.nodes[i].Process(ctx, set)
		if err == nil && !set.Val() {
			err = errTaken
		}
		return grant{}, err
	}
	vals, err := run(ctx, c.nodes[i], script, cmd).Slice()
	switch {
	case err != nil:
		return grant{}, err
	case len(vals) == 1 && vals[0] == int64(0):
		return grant{}, errTaken
	case len(vals) == 1:
		return grant{}, nil
	case len(vals) != 4:
		return grant{}, fmt.Errorf("acquire: unexpected reply %v", vals)
	}
	var n [3]uint64
	for j := range n {
		if n[j], err = strconv.ParseUint(fmt.Sprint(vals[j+1]), 10, 64); err != nil {
			return grant{}, fmt.Errorf("acquire: reply %v: %w", vals, err)
		}
	}
	return grant{counter: n[0], micros: n[1]*1_000_000 + n[2]}, nil
}

// ask sends call to every node at once and returns the decision at need, waiting at most wait
// and while ctx lives; replies after the decision are drained by the Client.
func ask[T any](c *Client, ctx context.Context, wait time.Duration, need int, call func(ctx context.Context, node int) (T, error)) quorum.Outcome[T] {
	callCtx, cancel := context.WithTimeout(ctx, wait)
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), call)
	out := r.Decide(need, callCtx.Done(), nil)
	drain(c, r, out, cancel, nil)
	return out
}

// drain hands the replies still in flight to late (when not nil) as they come, in a goroutine
// of the Client's, then cancels the calls' context.
func drain[T any](c *Client, r *quorum.Round[T], out quorum.Outcome[T], cancel context.CancelFunc, late func(quorum.Reply[T])) {
	if len(out.Pending) == 0 {
		cancel()
		return
	}
	c.bg.Go(func() {
		defer cancel()
		r.Rest(func(rep quorum.Reply[T]) {
			if late != nil {
				late(rep)
			}
		})
	})
}

// An undo is a release script and its EVALSHA (see evalsha), only read, so that one serves
// every node of a round.
type undo struct {
	script *redis.Script
	cmd    []any
}

// run releases on one node.
func (u undo) run(ctx context.Context, c *Client, node int) error {
	n, err := run(ctx, c.nodes[node], u.script, u.cmd).Int()
	if err == nil && n == 0 {
		err = errNotOwner
	}
	return err
}

// rollback releases one node after a failed attempt, or a node whose acquisition came after the
// lock ended. It runs after the caller may have given up, so it ignores ctx's cancellation and
// is bounded by the ttl instead: by then the key has expired. A failure is logged and returned.
func (c *Client) rollback(ctx context.Context, node int, u undo, ttl time.Duration) error {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	start := c.clock.Now()
	err := u.run(ctx, c, node)
	if c.observer != nil {
		c.replied(ctx, node, NodeRelease, start, err)
	}
	if err != nil && !errors.Is(err, errNotOwner) {
		c.log.WarnContext(ctx, "redlock: roll-back failed; the key expires with its ttl", "node", node, "key", u.cmd[3], "err", err)
	}
	return err
}

// abandon undoes, on every node, what a waiter's attempts left there for others (a writer's
// mark): the waiting call gave up. It is bounded by the node timeout, whatever ctx does.
func (c *Client) abandon(ctx context.Context, s *spec, w *waiter) {
	// A mutex's waiter leaves the queue by itself (a release names it once, then drops it),
	// but what nodes handed over to it must be handed on.
	if s.abandon == nil || (s.queued && w.ttl == "") || c.enter() != nil {
		return
	}
	defer c.leave()
	id, _, _, _ := c.wake.handed(w)
	script, keys := s.abandon, s.acqKeys // not s: it would escape to the heap
	ask(c, context.WithoutCancel(ctx), c.nodeTimeout, len(c.nodes), func(ctx context.Context, i int) (struct{}, error) {
		return struct{}{}, script.Run(ctx, c.nodes[i], keys, id, c.channel, id).Err()
	})
}

// nodeErrors describes every node that did not succeed in out.
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
