package redlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// mutexOps are the commands of a single-key lock: the key is a plain string holding the token.
// An attempt that does not wait is SET NX PX; a waiter's, or any with fencing, is acquire.lua,
// which keeps the key's line of waiters. lease is the Client's lease of a place in line,
// channel where the Client is told of releases, and leased whether its waiters' places need
// leases (a release cannot count the Client as hearing it on a cluster: see driver.Clustered).
type mutexOps struct {
	keys    wire.MutexKeys // Fence "" without fencing
	lease   time.Duration
	channel string
	leased  bool
}

// mutexOps returns the commands of the single-key lock whose keys are keys.
func (c *Client) mutexOps(keys wire.MutexKeys) mutexOps {
	return mutexOps{keys: keys, lease: c.lease(), channel: c.self.channel, leased: c.opts.leased}
}

// mutexSpec is a mutex's spec with its ops and the name it wakes, made in one allocation:
// every Lock call makes one.
type mutexSpec struct {
	spec
	ops  mutexOps
	wake [1]string
}

// mutex returns the spec of a lock of key; lock, try and do check the key.
func (c *Client) mutex(key string) *spec {
	keys := c.opts.names.Mutex
	if !c.opts.fencing {
		keys = c.opts.names.Unfenced
	}
	m := &mutexSpec{ops: c.mutexOps(keys(key))}
	m.wake[0] = m.ops.keys.Lock
	m.spec = spec{kind: locktrace.KindMutex, key: key, need: c.quorum, wake: m.wake[:], ops: &m.ops}
	if c.opts.fencing {
		m.spec.fence = func(token string, term uint64) command {
			return run(wire.FenceScript, wire.Fence{Keys: m.ops.keys, Token: token, Fence: term})
		}
	}
	return &m.spec
}

// setCall is SET NX's call with its key and token, made in one allocation.
type setCall struct {
	driver.Call
	key, token [1]string
}

func (m mutexOps) acquire(a attempt) command {
	if a.waiter == "" && m.keys.Fence == "" {
		set := &setCall{key: [1]string{m.keys.Lock}, token: [1]string{a.token}}
		set.Keys, set.Args, set.TTL = set.key[:], set.token[:], a.ttl
		return &set.Call
	}
	return run(wire.AcquireScript, wire.Acquire{Keys: m.keys, Token: a.token, TTL: a.ttl,
		Waiter: a.waiter, Place: a.place, Lease: a.lease, Behind: satMul(a.lease, behindLeases), Channel: m.channel, Leased: m.leased})
}

func (m mutexOps) extend(token string, ttl time.Duration) command {
	return run(wire.ExtendScript, wire.Extend{Key: m.keys.Lock, Token: token, TTL: ttl})
}

func (m mutexOps) release(token, channel, waiter string) command {
	return run(wire.ReleaseScript, wire.Release{Keys: m.keys, Token: token, Channel: channel, Waiter: waiter, Lease: m.lease, Leased: m.leased})
}

func (m mutexOps) rollback(a attempt, channel string) command {
	return run(wire.ReleaseScript, wire.Release{Keys: m.keys, Token: a.token, Channel: channel, Waiter: a.waiter, Rollback: true,
		Place: a.place, Lease: m.lease, Leased: m.leased})
}

func (m mutexOps) claim(token string, ttl time.Duration) command {
	return run(wire.ClaimScript, wire.MultiAcquire{Keys: []string{m.keys.Lock}, Token: token, TTL: ttl})
}

func (m mutexOps) abandon(waiter, channel string) (command, bool) {
	return run(wire.LeaveScript, wire.Leave{Keys: m.keys, Waiter: waiter, Channel: channel, Lease: m.lease}), true
}

// Lock acquires key for ttl, retrying until it succeeds, ctx is done or the Client is closed.
//
// Waiting costs no polling: a refused call takes a place in the key's line on every node it
// reaches. A release on a node hands the key to the first live waiter in its line (the key
// holds that waiter's name, so no other call can take it) and wakes that waiter alone, whose
// next attempt takes it. So waiters of all processes are served in the order they began
// waiting, and nothing cuts in between a release and the next holder. A waiter's attempts in
// between only renew its place, twice a lease (see WithRetryDelay); one that finds the key
// handed to it takes it, should the wake-up be lost. A lock that expires instead of being
// released is tried again by the first waiter in line when the nodes said it would expire. A
// Lock call for a key the Client waited for lately, or whose last attempt by the Client split
// the vote, takes its place in line from its first attempt.
//
// On failure the error wraps ErrNotAcquired, the last attempt's *NodeError for each node that
// did not say yes, and ctx.Err() or ErrClosed when that is what ended the wait.
//
// When ctx carries a held lock of key (Lock.Context), Lock, TryLock and Do re-enter it at once.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.lock(ctx, c.mutex(key), ttl)
}

// TryLock makes exactly one attempt to acquire key for ttl. It fails with ErrNotAcquired,
// wrapping a *NodeError for each node that did not say yes. A refused attempt returns once its
// roll-back has landed where it set the key (within the node timeout), so that what it set
// stands in no later call's way; the TryLock of every primitive does the same.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.try(ctx, c.mutex(key), ttl)
}

// Do acquires key like Lock, runs fn, and releases the lock when fn returns or panics (the
// panic then goes on to Do's caller). While fn runs the lock is kept (see Lock.KeepAlive). If
// the lock cannot be proved held any more, or Close releases it, fn's context is cancelled at
// once with the reason as its cause (see context.Cause; it wraps ErrNotHeld or ErrClosed), and
// Do returns an error wrapping that reason and fn's error. Otherwise Do returns fn's error. fn
// must stop using the protected resource when its context is done. fn's context carries the
// lock: a Lock, TryLock or Do of key with it re-enters the lock (see Lock.Context).
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.do(ctx, c.mutex(key), ttl, fn)
}

// fence is fencing's second round for the attempt of token whose yes replies are granted: the
// token is fenceOf their counters and clocks; each node still holding the key raises its
// counter to it, and the round must reach the quorum before until.
func (k *contender) fence(ctx context.Context, token string, granted []quorum.Reply[wire.Grant], until time.Time) (uint64, error) {
	c := k.c
	fence := fenceOf(granted, uint64(c.opts.clock.Now().UnixMicro()))
	wait := until.Sub(c.opts.clock.Now())
	if wait <= 0 {
		return 0, errors.New("redlock: no validity left for the fencing round")
	}
	rd := round[struct{}]{c: c, op: locktrace.NodeFence, cmd: k.s.fence(token, fence),
		decode: decodeHeld, wait: min(c.opts.nodeTimeout, wait), need: k.s.need, stop: c.life.done}
	out := rd.ask(ctx)
	out.rest(nil)
	if out.Quorum && c.opts.clock.Now().Before(until) {
		return fence, nil
	}
	if out.Stopped && closed(c.life.done) {
		return 0, ErrClosed
	}
	errs := []error{errors.New("redlock: the fencing round reached no quorum within the validity")}
	return 0, errors.Join(append(errs, nodeErrors(c, ctx, out.Outcome, rd.wait)...)...)
}

// fenceOf returns the fencing token of an acquisition whose yes replies are granted: the larger
// of their highest counter + 1 and the median of at least three clocks, theirs and, when fewer
// than three nodes said yes, local (the Client's clock, in µs since the epoch) as many times as
// it takes. So one clock far off, behind or ahead, never decides the token: with two yes replies
// alone, the lower or the higher clock could be the one that is off.
func fenceOf(granted []quorum.Reply[wire.Grant], local uint64) uint64 {
	var top uint64
	clocks := make([]uint64, 0, max(len(granted), 3))
	for _, rep := range granted {
		if rep.Err == nil {
			top = max(top, rep.Value.Counter)
			clocks = append(clocks, rep.Value.Micros)
		}
	}
	for len(clocks) < 3 {
		clocks = append(clocks, local)
	}
	slices.Sort(clocks)
	return max(top+1, clocks[(len(clocks)-1)/2])
}

// recent remembers the keys a Client waited for lately, until when they count as contended.
type recent struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxRecent bounds the keys remembered; past it, the memory starts afresh.
const maxRecent = 1024

func (r *recent) mark(key string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.until == nil || len(r.until) >= maxRecent {
		r.until = make(map[string]time.Time)
	}
	r.until[key] = until
}

// contended reports whether key was waited for lately, as of now.
func (r *recent) contended(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.until[key]
	if ok && !now.Before(until) {
		delete(r.until, key)
		return false
	}
	return ok
}
