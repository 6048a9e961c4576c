package redlock

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A contender is one acquiring call while it runs: what it acquires and for how long, its
// place in line once it waits, and how its last attempts went. TryLock makes one attempt; Lock
// makes attempts until one succeeds, waiting in between for a release (announced by the
// nodes) or a timer.
//
// Once it waits, a contender has a name for its whole life and a place in the line of every
// node its attempts reached (a mutex's): a release hands the key to the first live waiter in
// the node's line and wakes that one only, so waiters of every process are served in the order
// they began waiting. Its place is live while its Client hears the node (hand.lua): a waiter
// whose process ended is passed over at once, and one that does not come (a paused process)
// holds a key handed to it one lease at most. Each attempt renews the line's life (and, for a
// cluster's Client, which hears on one node only, the waiter's lease on each node).
type contender struct {
	c     *Client
	s     *spec
	ttl   time.Duration
	call  locktrace.Call  // as reported to the Observer
	w     *waiter         // set once it waits
	ready <-chan struct{} // closed once the Client hears releases
	place int64           // its place in line: when it began waiting
	// splits counts the attempts in a row that won some nodes but no quorum, since the last
	// release it heard.
	splits int
	// atExpiry is set while its pause ends when the holder's key expires: if the key is still
	// there then (a node whose clock lags, or a holder that extended it), the next pause is
	// the retry delay, so that nodes saying "about to expire" cannot make it spin.
	atExpiry bool
	// behind is set while others were ahead of it in line at its last attempt: it holds its
	// place for longer (see lease).
	behind bool
}

// A result is how an attempt that did not acquire went.
type result struct {
	err     error
	votes   int           // nodes that said yes
	elapsed time.Duration // from the first send to the decision
	// ahead is the fewest waiters any node has in line before this one, -1 when no node
	// gave it a place.
	ahead int64
	// expiry is how long after the decision a quorum of nodes will have let the holder's key
	// expire, as their replies said; -1 when too few said.
	expiry time.Duration
	// settled is closed once the attempt's roll-back has landed on all the nodes it went to
	// but as many as the key can do without (see rollback); nil when it sent no more.
	settled <-chan struct{}
}

// lock acquires what s says for ttl, waiting: the Lock of every primitive.
func (c *Client) lock(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	return c.contend(ctx, locktrace.OpLock, s, ttl, (*contender).acquire)
}

// try makes one attempt to acquire what s says for ttl: the TryLock of every primitive.
func (c *Client) try(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	return c.contend(ctx, locktrace.OpTryLock, s, ttl, (*contender).once)
}

// contend checks s and ttl, then acquires with how, reporting the call as op.
func (c *Client) contend(ctx context.Context, op locktrace.Op, s *spec, ttl time.Duration, how func(*contender, context.Context) (*Lock, error)) (*Lock, error) {
	ctx, call := c.begin(ctx, op, s)
	var l *Lock
	err := c.check(s, ttl)
	if err == nil {
		l, err = c.reenter(ctx, s, ttl)
	}
	if l == nil && err == nil {
		l, err = how(&contender{c: c, s: s, ttl: ttl, call: call}, ctx)
	}
	c.end(ctx, call, err)
	return l, err
}

// once makes exactly one attempt. A refused one returns once its roll-back has landed (within
// the node timeout), so that what it set on some nodes no longer stands in the way of a call
// that follows it: a TryLock after another's Unlock finds the permits that Unlock freed.
func (k *contender) once(ctx context.Context) (*Lock, error) {
	l, r := k.try(ctx)
	k.settle(ctx, r)
	return l, r.err
}

// settle waits until the refused attempt r's roll-back has landed, at most the node timeout.
func (k *contender) settle(ctx context.Context, r result) {
	if r.settled == nil {
		return
	}
	t := k.c.opts.clock.NewTimer(k.c.opts.nodeTimeout)
	defer t.Stop()
	select {
	case <-r.settled:
	case <-t.C:
	case <-ctx.Done():
	case <-k.c.life.done:
	}
}

// acquire makes attempts until one succeeds, ctx ends or the Client closes. A key the Client
// waited for lately, or whose last attempt split the vote, likely has waiters in other
// processes: then even the first attempt is a waiter's, which does not cut ahead of them.
func (k *contender) acquire(ctx context.Context) (l *Lock, err error) {
	defer func() { k.stop(ctx, l) }()
	if k.c.recent.contended(k.s.wake[0], k.c.opts.clock.Now()) {
		if err := k.listen(ctx); err != nil {
			return nil, errors.Join(ErrNotAcquired, err)
		}
	}
	for {
		l, r := k.try(ctx)
		switch {
		case l != nil:
			return l, nil
		case ctx.Err() != nil:
			if !errors.Is(r.err, ctx.Err()) {
				r.err = errors.Join(r.err, ctx.Err())
			}
			return nil, r.err
		case errors.Is(r.err, ErrClosed):
			return nil, r.err
		case k.w == nil:
			// Refused: wait, and try again at once as a waiter, listening now, so that a
			// release after this attempt is heard.
			if err := k.listen(ctx); err != nil {
				return nil, errors.Join(r.err, err)
			}
		default:
			if err := k.pause(ctx, r); err != nil {
				return nil, errors.Join(r.err, err)
			}
		}
		// Not before the attempt's own roll-back landed: a release may wake the waiter sooner,
		// and an attempt would find its own keys, and take that refusal for another holder's.
		k.settle(ctx, r)
	}
}

// listen makes the contender a waiter: it takes a name and a place in line, listens for
// releases, and waits (at most the node timeout) until they are heard.
func (k *contender) listen(ctx context.Context) error {
	c := k.c
	if err := c.enter(); err != nil {
		return err
	}
	w, ready := c.listener.join(k.s)
	k.ready = ready
	c.leave()
	k.w, k.place = w, c.opts.clock.Now().UnixMicro()
	c.recent.mark(k.s.wake[0], c.opts.clock.Now().Add(k.ttl))
	c.waiting(ctx, k.call)
	t := c.opts.clock.NewTimer(c.opts.nodeTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C: // the timer is the fallback for releases not heard
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.done:
		return ErrClosed
	}
	return nil
}

// lease is how long a waiter's place in line lasts unless an attempt renews it (the line, and a
// cluster's Client's lease of the place): longer than the longest pause between two attempts
// (the retry delay) and two attempts' worth of node timeouts. It is also how long a key handed
// to a waiter waits for it (hand.lua).
func (c *Client) lease() time.Duration {
	return satAdd(c.opts.retryMax, satMul(c.opts.nodeTimeout, 3))
}

// behindLeases is how many of the Client's leases a waiter with others ahead of it in line on a
// node holds its place there for (acquire.lua): it renews its place that much less often, and
// a release that hands it the key waits for it one of the releasing Client's leases at most
// (hand.lua), so that a waiter that does not come holds the key up for one lease at most all
// the same.
const behindLeases = 4

// lease is how long the contender's place lasts after its last attempt on every node that gave
// it one: the Client's lease, or behindLeases of them when others were ahead of it on each.
func (k *contender) lease() time.Duration {
	if k.behind {
		return satMul(k.c.lease(), behindLeases)
	}
	return k.c.lease()
}

// pause waits after the failed attempt r until its timer fires, or until releases woke the
// waiter (see heard).
func (k *contender) pause(ctx context.Context, r result) error {
	c := k.c
	t := c.opts.clock.NewTimer(k.pauseAfter(r))
	defer t.Stop()
	var grace <-chan time.Time
	for {
		select {
		case <-t.C:
			return nil
		case <-k.w.wake:
			// A release: try once a quorum of nodes told of it, or after a moment (twice the
			// last attempt's time) for the nodes whose word is slow to come.
			k.splits = 0
			if c.listener.heard(k.w) >= min(k.s.need, len(c.listener.nodes)) {
				return nil
			}
			if grace == nil {
				g := c.opts.clock.NewTimer(2 * max(r.elapsed, minSplitUnit))
				defer g.Stop()
				grace = g.C
			}
		case <-grace:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-c.life.done:
			return ErrClosed
		}
	}
}

// ahead returns the fewest waiters that a node of out has in line before the attempt's waiter,
// -1 when no node gave it a place.
func ahead(out quorum.Outcome[wire.Grant]) int64 {
	least := int64(-1)
	for _, rep := range out.Replies {
		if n := rep.Value.Ahead; n >= 0 && (least < 0 || n < least) {
			least = n
		}
	}
	return least
}

// expiry returns how long the key has left on the need-th node to let it go, of the nodes that
// said (a yes counts as none left), or -1 when fewer than need said.
func expiry(out quorum.Outcome[wire.Grant], need int) time.Duration {
	var left []time.Duration
	for _, rep := range out.Replies {
		switch {
		case rep.Err == nil:
			left = append(left, 0)
		case rep.Value.Left >= 0:
			left = append(left, rep.Value.Left)
		}
	}
	if need < 1 || len(left) < need {
		return -1
	}
	slices.Sort(left)
	return left[need-1]
}

// pauseAfter takes the failed attempt r into the waiter's episode (whether its pause ends at the
// holder's expiry, how many split votes in a row) and returns how long to wait when no release
// wakes the waiter. A waiter with a place in line needs no polling: the release that frees the key
// hands it to the first live waiter in line on each node, and tells it. Its attempts only renew its
// place, twice a lease (see lease), and one that finds the key handed to it takes it (so a lost
// message costs at most that pause). First in line, it tries again when the key expires on a
// quorum of nodes, if that comes sooner: a holder that crashed releases nothing, and a key handed
// to a waiter that does not come lapses after the releasing Client's lease, so that such a
// waiter holds the key up for a lease at most. After a split vote, now or lately, it tries again sooner
// (see splitPause).
func (k *contender) pauseAfter(r result) time.Duration {
	select {
	case <-k.ready:
	default: // the Client cannot hear releases yet: try again soon
		return min(k.c.retryDelay(), k.c.opts.nodeTimeout)
	}
	pause := k.c.retryDelay()
	if r.ahead >= 0 {
		k.behind = r.ahead > 0
		pause = k.lease() / 2
	}
	// Only the waiter first in line on a node: the key's expiry is its turn (a waiter behind
	// it is handed the key in its turn), and a key handed to a waiter just ahead expires in a
	// lease at most, which would have every waiter behind try again at once. Not twice in a
	// row: a key still there at its expiry (a node whose clock lags, or a holder that extended
	// it) must not make the waiter spin.
	k.atExpiry = r.ahead == 0 && r.expiry >= 0 && r.expiry < pause && !k.atExpiry
	if k.atExpiry {
		pause = r.expiry + time.Millisecond
	}
	if r.votes > 0 || k.splits > 0 {
		pause = min(pause, k.splitPause(r))
		k.splits++
	}
	return pause
}

// splitPause is the pause after the attempt r when its vote split, now or lately: nobody may
// hold the key once everyone's roll-back lands, and a mutex's roll-back wakes at most the first
// waiter in line, never its own. It is shorter the more nodes r won, in units of r's duration,
// and doubles with each split in a row, so that the holder of a bare quorum is not polled fast.
func (k *contender) splitPause(r result) time.Duration {
	unit := max(r.elapsed, minSplitUnit)
	split := satMul(unit, int64(max(k.s.need-r.votes, 0))) + time.Duration(mrand.Int64N(int64(unit)+1))
	return satMul(split, 1<<min(k.splits, 20))
}

// minSplitUnit is the least pause unit after a split vote: an attempt can take no measurable
// time (in-memory nodes, or a virtual clock), and a zero pause would spin without yielding.
const minSplitUnit = 100 * time.Microsecond

// stop ends the contender's wait, once its call ends with l (nil when it did not acquire): a
// waiter that gives up undoes what its attempts left for others on every node (it leaves the
// lines it joined, or takes its mark away), in a goroutine of the Client, so that the call
// returns by its caller's deadline.
func (k *contender) stop(ctx context.Context, l *Lock) {
	c := k.c
	if k.w == nil {
		return
	}
	c.waited(ctx, k.call)
	if c.enter() != nil {
		return // Close gives up the places of the waiters it found
	}
	defer c.leave()
	c.listener.leave(k.w)
	if l == nil { // in the background: the call returns by its deadline
		c.life.bg.Go(func() { c.abandon(ctx, k.w) })
	}
}

// closed reports whether done is closed.
func closed(done <-chan time.Time) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// abandon undoes on every node what w's attempts left there for others, waiting at most the
// node timeout.
func (c *Client) abandon(ctx context.Context, w *waiter) {
	if w.ok {
		rd := round[struct{}]{c: c, op: locktrace.NodeRelease, cmd: w.abandon, decode: decodeHeld, wait: c.opts.nodeTimeout, need: len(c.nodes)}
		rd.ask(context.WithoutCancel(ctx)).rest(nil)
	}
}

func (c *Client) retryDelay() time.Duration {
	return c.opts.retryMin + time.Duration(mrand.Uint64N(uint64(c.opts.retryMax-c.opts.retryMin)+1))
}
