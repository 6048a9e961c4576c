// Package redlock is a distributed lock over N independent Redis masters (the Redlock
// algorithm). An acquisition asks every node at once and succeeds only when a majority said yes
// within the lock's drift-corrected validity; a failed attempt is rolled back on every node. The
// lock stays correct while a minority of nodes is down, slow or partitioned away.
//
// The guarantee rests on assumptions spelled out in the README: node clocks advance at rates
// that differ by less than the drift factor, a node that restarts does not come back without
// the keys it held (persistence with fsync, or a restart delayed beyond the longest TTL), and a
// holder stops using the lock when Until has passed.
package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/quorum"
)

// conn is what the algorithm needs of one Redis master.
type conn interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

var _ conn = redis.UniversalClient(nil)

// A Client locks keys across a fixed set of independent Redis masters. It is safe for
// concurrent use. It does not own the go-redis clients it was given: Close leaves them open.
type Client struct {
	nodes    []conn
	addrs    []string
	listen   []conn // where releases are heard: the nodes, or NewCluster's one cluster
	tagged   bool   // NewCluster's: every key on a node starts with that vote's hash tag
	quorum   int
	channel  string // where Unlock announces releases: the prefix + "redlock:released"
	announce any    // channel, boxed once
	id       string // names the Client's waiters, and its own channel: channel + ":" + id
	waiters  atomic.Uint64
	wake     releases
	queue    turns
	options

	// mu orders Close after every call in progress, so that no goroutine is added to bg once
	// Close has started waiting for it.
	mu     sync.RWMutex
	closed bool
	done   chan struct{} // closed by Close: ends waits between retries
	bg     sync.WaitGroup
}

// New returns a Client over nodes, independent Redis masters (not replicas of one another);
// use an odd number, 3 or 5 usually. Each node's index in nodes names it in errors. A node may
// be a *redis.ClusterClient, a whole Redis Cluster that counts as one vote: every key a lock
// uses on it lives in the lock key's hash slot (see WithKeyPrefix). To vote with the masters of
// one cluster instead, use NewCluster.
//
// New checks everything and sends nothing: it fails on no nodes, a nil node, a node given
// twice, or an option out of range.
func New(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes")
	}
	c, err := newClient(len(nodes), opts)
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		if isNil(n) {
			return nil, fmt.Errorf("redlock: node %d is nil", i)
		}
		for j := range i {
			if same(nodes[j], n) {
				return nil, fmt.Errorf("redlock: node %d is the same client as node %d", i, j)
			}
		}
		c.nodes[i] = n
		switch n := n.(type) {
		case *redis.Client:
			c.addrs[i] = n.Options().Addr
		case *redis.ClusterClient:
			c.addrs[i] = strings.Join(n.Options().Addrs, ",")
		}
	}
	c.listen = c.nodes
	return c, nil
}

// newClient returns a Client for n nodes, yet to be filled in, with opts applied.
func newClient(n int, opts []Option) (*Client, error) {
	c := &Client{
		nodes:   make([]conn, n),
		addrs:   make([]string, n),
		quorum:  quorum.Of(n),
		options: defaultOptions(),
		done:    make(chan struct{}),
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("redlock: nil option")
		}
		if err := opt(&c.options); err != nil {
			return nil, err
		}
	}
	c.channel = c.prefix + "redlock:released"
	c.announce = c.channel
	c.id = newToken()
	c.wake.c = c
	return c, nil
}

func isNil(n redis.UniversalClient) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func same(a, b redis.UniversalClient) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer &&
		va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// Close stops waiting Lock calls (they return ErrClosed), ends the client's subscriptions and
// waits for the client's own goroutines: calls to nodes still in flight and their clean-up. A
// node call that its go-redis client does not bound by the context ends at the client's own
// read timeout. Close does not close the go-redis clients, and does not release held locks.
// Calling Close again does nothing.
func (c *Client) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	c.wake.close()
	c.bg.Wait()
	return nil
}

// Lock acquires key for ttl, retrying until it succeeds, ctx is done or the Client is closed.
//
// It does not poll. After a failed attempt, the Client's waiters for one key queue behind each
// other, so that only one of them contends with other processes at a time. That one's attempts
// put it in the key's queue on the nodes (see WithKeyPrefix for the key names); Unlock
// announces a release on every node, naming the waiter first in that node's queue to that
// waiter's Client (one subscription per node serves the whole Client), and the waiter named
// alone tries again at once. A Lock call for a key the Client waited for lately does not cut
// ahead of the queue either: its first attempt joins it when another waiter heads it. So
// waiters of different processes are served in the order they began waiting, and a release
// does not wake them all to split the nodes between them. A jittered timer (WithRetryDelay)
// is the fallback for lost announcements, for waiters not named (one that gave up or crashed
// is named once, then dropped from the queue) and for locks that expire instead of being
// released. When an attempt still lost a split vote (it won some nodes, another process won
// others, nobody a majority), the contender that won more nodes retries first, so that they
// do not collide again.
//
// On failure the error wraps ErrNotAcquired, the last attempt's *NodeError for each node that
// did not say yes, and ctx.Err() or ErrClosed when that is what ended the wait.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	if err := c.check(key, ttl); err != nil {
		return nil, err
	}
	stored := c.prefix + key
	// A key this Client waited for lately is likely to have waiters in other processes: then
	// even the first attempt is made as a waiter that does not cut ahead of them.
	var w *waiter
	busy, polite := c.queue.state(stored, c.clock.Now())
	if polite {
		w = c.newWaiter(stored)
	}
	a := attemptResult{err: ErrNotAcquired}
	if !busy { // else this Client's waiters came first: queue behind them
		var l *Lock
		l, a = c.attempt(ctx, key, ttl, w, polite)
		if l != nil || ctx.Err() != nil || errors.Is(a.err, ErrClosed) {
			return l, a.err
		}
	} else {
		// Its turn comes from a waiter of this Client, which may still head the queue while
		// its release is in flight: a polite attempt would wait behind it for nothing.
		polite = false
	}

	// Contended: wait for our turn among this Client's waiters, then listen for releases.
	if err := c.queue.take(ctx, stored, c.done); err != nil {
		return nil, errors.Join(a.err, err)
	}
	defer c.queue.give(stored)
	defer func() { c.queue.mark(stored, c.clock.Now().Add(ttl)) }()
	if w == nil {
		w = c.newWaiter(stored)
	}
	ready := c.wake.join(w)
	if ready == nil {
		return nil, errors.Join(a.err, ErrClosed)
	}
	defer c.wake.leave(w)
	if err := c.await(ctx, ready, c.nodeTimeout); err != nil {
		return nil, errors.Join(a.err, err)
	}
	how, splits := "queued", 0
	for {
		// Listening now, so a release after this attempt is heard. Only a waiter woken by
		// its name or by the timer takes the key ahead of others in the queue.
		l, a := c.attempt(ctx, key, ttl, w, polite && how == "queued")
		if l != nil {
			c.log.DebugContext(ctx, "redlock: acquired", "key", key, "after", how)
			return l, nil
		}
		if ctx.Err() != nil || errors.Is(a.err, ErrClosed) {
			return nil, a.err
		}
		delay := c.retryDelay()
		how = "timer"
		if a.votes > 0 || splits > 0 {
			// A split vote, now or in this episode: nobody may hold the key once everyone's
			// roll-back lands, and roll-backs are not announced. Retry after a pause that is
			// shorter the more nodes this attempt won, in units of its duration, doubling while
			// the episode lasts (so a holder of a bare majority is not polled fast).
			unit := max(a.elapsed, minSplitUnit)
			split := time.Duration(c.quorum-a.votes)*unit + time.Duration(mrand.Int64N(int64(unit)+1))
			if split <<= min(splits, 20); split < delay {
				delay, how = split, "split vote"
			}
			splits++
		}
		t := c.clock.NewTimer(delay)
		select {
		case <-t.C:
		case <-w.wake:
			t.Stop()
			how, splits = "release announced", 0
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(a.err, ctx.Err())
		case <-c.done:
			t.Stop()
			return nil, errors.Join(a.err, ErrClosed)
		}
	}
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

// TryLock makes exactly one attempt to acquire key for ttl. It fails with ErrNotAcquired,
// wrapping a *NodeError for each node that did not say yes.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	if err := c.check(key, ttl); err != nil {
		return nil, err
	}
	l, a := c.attempt(ctx, key, ttl, nil, false)
	return l, a.err
}

// check rejects what no attempt could do anything sensible with.
func (c *Client) check(key string, ttl time.Duration) error {
	if key == "" {
		return errors.New("redlock: empty key")
	}
	return c.checkTTL(ttl)
}

func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl%time.Millisecond != 0 {
		return fmt.Errorf("redlock: ttl %v is not a whole number of milliseconds (Redis expires keys in ms)", ttl)
	}
	if d := clock.Drift(ttl, c.driftFactor); ttl <= d {
		return fmt.Errorf("redlock: ttl %v must be larger than the clock drift allowance %v", ttl, d)
	}
	return nil
}

func (c *Client) retryDelay() time.Duration {
	return c.retryMin + mrand.N(c.retryMax-c.retryMin+1)
}

// enter registers a call in progress; leave must follow. It fails once the Client is closed.
func (c *Client) enter() error {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (c *Client) leave() { c.mu.RUnlock() }

// An attemptResult tells how a failed attempt went.
type attemptResult struct {
	err     error
	votes   int           // nodes that said yes
	elapsed time.Duration // from the first send to the decision
}

// attempt is one acquisition: SET NX PX on every node at once, a decision at quorum, and the
// roll-back of every node that may hold the key when the decision is no.
//
// A waiting Lock call passes its waiter w: a node that finds the key taken then puts w in the
// key's queue, from which releases name the next contender. With w, a failed attempt also waits
// for the replies still in flight, at most as long again as the decision took, so that its vote
// count is true: a contender that won nodes it had not heard from yet would otherwise believe it
// won none and wait for an announcement that never comes. With polite, a node where another
// waiter heads the queue puts w in it rather than give it the key, even a free key.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration, w *waiter, polite bool) (*Lock, attemptResult) {
	if err := c.enter(); err != nil {
		return nil, attemptResult{err: errors.Join(ErrNotAcquired, err)}
	}
	defer c.leave()
	token := newToken()
	stored := c.prefix + key
	var keys []string // the acquire script's; nil for a plain SET NX PX
	var args []any
	if c.fencing || w != nil {
		keys = []string{stored, queueKey(stored)}
		if c.fencing {
			keys = append(keys, fenceKey(stored))
		}
		args = []any{token, strconv.FormatInt(ttl.Milliseconds(), 10), "", "", ""}
		if w != nil {
			args[2], args[3] = w.id, w.score
		}
		if polite {
			args[4] = "1"
		}
	}

	start := c.clock.Now()
	until := clock.Deadline(start, ttl, c.driftFactor)
	wait := min(c.nodeTimeout, until.Sub(start))
	callCtx, cancel := context.WithTimeout(ctx, wait)
	var value any = token // boxed once, not once a node
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), func(ctx context.Context, i int) (grant, error) {
		return c.acquireOn(ctx, i, stored, value, ttl, keys, args)
	})
	out := decide(c, callCtx, r)
	now := c.clock.Now()

	granted := out.Quorum && now.Before(until)
	var fence uint64
	var fenceErrs []error
	if granted && c.fencing {
		fence = fenceToken(out.Replies)
		granted, fenceErrs = c.fenceRound(ctx, keys, token, fence, until)
		now = c.clock.Now()
		granted = granted && now.Before(until)
	}
	if granted {
		l := &Lock{c: c, key: key, stored: stored, token: token, fence: fence, until: until, pending: out.Pending}
		var waiter any = ""
		if w != nil {
			waiter = w.id
		}
		l.relKeys, l.relArgs = []string{stored, queueKey(stored)}, []any{value, c.announce, waiter}
		drain(c, r, out, cancel, func(rep quorum.Reply[grant]) { l.late(ctx, rep, ttl) })
		return l, attemptResult{}
	}

	elapsed := now.Sub(start)
	if w != nil && len(out.Pending) > 0 && ctx.Err() == nil {
		t := c.clock.NewTimer(max(elapsed, minSplitUnit))
		r.Linger(&out, t.C)
		t.Stop()
	}

	// Roll back: release wherever our SET may have landed, that is everywhere but the nodes
	// that clearly said no; a node still in flight is released once its reply is in.
	votes := 0
	undoKeys, undoArgs := []string{stored}, []any{value, ""} // not announced
	for _, rep := range out.Replies {
		if rep.Err == nil {
			votes++
		}
		if !errors.Is(rep.Err, errTaken) {
			c.bg.Go(func() { c.rollback(ctx, rep.Node, undoKeys, undoArgs, ttl) })
		}
	}
	drain(c, r, out, cancel, func(rep quorum.Reply[grant]) {
		if !errors.Is(rep.Err, errTaken) {
			c.rollback(ctx, rep.Node, undoKeys, undoArgs, ttl)
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
		c.log.DebugContext(ctx, "redlock: not acquired", "key", key, "votes", votes, "err", err)
	}
	return nil, attemptResult{err: err, votes: votes, elapsed: elapsed}
}

// A grant is one node's yes to an acquisition; with fencing, it carries that node's fencing
// counter and clock, read atomically with the SET.
type grant struct {
	counter uint64
	micros  uint64 // the node's TIME in microseconds
}

// acquireOn asks node i for the key: a plain SET NX PX, or the acquire script when keys are
// given (a contender in the queue, or fencing's round 1).
func (c *Client) acquireOn(ctx context.Context, i int, stored string, token any, ttl time.Duration, keys []string, args []any) (grant, error) {
	if keys == nil {
		ok, err := c.nodes[i].SetNX(ctx, stored, token, ttl).Result()
		if err == nil && !ok {
			err = errTaken
		}
		return grant{}, err
	}
	vals, err := acquireScript.Run(ctx, c.nodes[i], keys, args...).Slice()
	switch {
	case err != nil:
		return grant{}, err
	case len(vals) == 1 && vals[0] == int64(0):
		return grant{}, errTaken
	case len(vals) == 1 && !c.fencing:
		return grant{}, nil
	case len(vals) != 4 || !c.fencing:
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

// queueKey names the queue of contenders waiting for the key stored, in its hash slot.
func queueKey(stored string) string { return keyslot.Companion("queue", stored) }

// fenceKey names the fencing counter of the key stored, in its hash slot.
func fenceKey(stored string) string { return keyslot.Companion("fence", stored) }

// fenceToken is the fencing token for the nodes that said yes: the larger of their highest
// counter + 1 and the median of their clocks, which one far-off clock cannot move.
func fenceToken(replies []quorum.Reply[grant]) uint64 {
	var top uint64
	var clocks []uint64
	for _, rep := range replies {
		if rep.Err == nil {
			top = max(top, rep.Value.counter)
			clocks = append(clocks, rep.Value.micros)
		}
	}
	slices.Sort(clocks)
	return max(top+1, clocks[(len(clocks)-1)/2])
}

// fenceRound is fencing's round 2: raise the counter to fence on every node still holding our
// key, and report whether a quorum did so before until. keys are the acquire script's: the
// stored key, its queue and its fencing counter.
func (c *Client) fenceRound(ctx context.Context, keys []string, token string, fence uint64, until time.Time) (bool, []error) {
	wait := until.Sub(c.clock.Now())
	if wait <= 0 {
		return false, []error{}
	}
	wait = min(c.nodeTimeout, wait)
	t := strconv.FormatUint(fence, 10)
	out := ask(c, ctx, wait, func(ctx context.Context, i int) (struct{}, error) {
		n, err := fenceScript.Run(ctx, c.nodes[i], []string{keys[0], keys[2]}, token, t).Int()
		if err == nil && n == 0 {
			err = errNotOwner
		}
		return struct{}{}, err
	})
	if out.Quorum {
		return true, nil
	}
	return false, nodeErrors(c, ctx, out, wait)
}

// ask sends call to every node at once and returns the decision, waiting at most wait and while
// ctx lives; replies after the decision are drained by the Client.
func ask[T any](c *Client, ctx context.Context, wait time.Duration, call func(ctx context.Context, node int) (T, error)) quorum.Outcome[T] {
	callCtx, cancel := context.WithTimeout(ctx, wait)
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), call)
	out := decide(c, callCtx, r)
	drain(c, r, out, cancel, nil)
	return out
}

// decide waits for the round's verdict while callCtx, the calls' context, lives: its deadline
// is the node timeout, a bound on network calls in real time (the injected clock measures
// validity, not this).
func decide[T any](c *Client, callCtx context.Context, r *quorum.Round[T]) quorum.Outcome[T] {
	return r.Decide(c.quorum, callCtx.Done(), nil)
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

// rollback releases one node after a failed attempt, or a node whose SET came after the lock
// ended, with the release script's keys and args (see release). It runs after the caller may
// have given up, so it ignores ctx's cancellation and is bounded by the ttl instead: by then the
// key has expired. A failure is logged and returned.
func (c *Client) rollback(ctx context.Context, node int, keys []string, args []any, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	err := c.release(ctx, node, keys, args)
	if err != nil && !errors.Is(err, errNotOwner) {
		c.log.WarnContext(ctx, "redlock: roll-back failed; the key expires with its ttl", "node", node, "key", keys[0], "err", err)
	}
	return err
}

// release compare-and-deletes the key on one node: keys are the stored key, args the token and
// the channel to announce the release on ("" for none). Both are only read, so one pair serves
// every node of a round.
func (c *Client) release(ctx context.Context, node int, keys []string, args []any) error {
	n, err := releaseScript.Run(ctx, c.nodes[node], keys, args...).Int()
	if err == nil && n == 0 {
		err = errNotOwner
	}
	return err
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

// newToken returns 128 random bits from crypto/rand, base64url-encoded.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b[:])
}
