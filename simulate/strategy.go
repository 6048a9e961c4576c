package simulate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// A Strategy is a way to lock: this module's redlock, or a simpler lock as blog posts and
// other libraries write it, run here to show the failure it cannot survive.
type Strategy string

const (
	// Redlock is this module's redlock.Client over every node of the cluster.
	Redlock Strategy = "redlock"
	// RedlockFencing is Redlock made WithFencing: every write to the store carries the lock's
	// fencing token, and the store refuses one lower than the highest it has seen.
	RedlockFencing Strategy = "redlock+fencing"
	// GetsetTakeover is a timestamp lock on one node: SET key expiry-timestamp NX PX ttl; a key
	// whose timestamp has passed on the caller's clock is taken over with GET then GETSET; the
	// release is the Lua compare-and-delete.
	GetsetTakeover Strategy = "getset-takeover"
	// GetThenDel is GetsetTakeover with no expiry on the key (SETNX key expiry-timestamp) and a
	// release that does GET then DEL without checking whose value it got.
	GetThenDel Strategy = "get-then-del"
	// SingleNode is the lock on one node: SET key token NX PX ttl, released with the Lua
	// compare-and-delete. Correct while its node keeps the key.
	SingleNode Strategy = "single-node"
	// GetCompareDel is SingleNode with a release in two commands: GET, compare with the token,
	// then DEL, so the key can change hands between the two.
	GetCompareDel Strategy = "get-compare-del"
	// MajoritySemaphore is a semaphore over every node that admits a holder on a majority of
	// them, whatever the permits: the rule of swarthy/redis-semaphore's RedlockSemaphore (npm).
	// Each node admits a holder while it has fewer than the permits, by its own clock.
	MajoritySemaphore Strategy = "majority-semaphore"
	// Election is this module's leader election (Client.Election) over every node: each client
	// is a candidate that campaigns, and a term is a critical section whose writes to the store
	// carry the term number as their fencing token; the leader resigns at the end of its work.
	Election Strategy = "election"
)

// quorumed reports whether the strategy runs over every node of the cluster (5 by default)
// rather than one.
func (s Strategy) quorumed() bool {
	return s == Redlock || s == RedlockFencing || s == MajoritySemaphore || s == Election
}

// newLocker returns client c's lock for the run's strategy.
func (r *run) newLocker(c *client) (locker, error) {
	if r.sc.Strategy == Redlock || r.sc.Strategy == RedlockFencing || r.sc.Strategy == Election {
		var nodes []redis.UniversalClient
		for _, l := range c.links {
			nodes = append(nodes, r.redis(l))
		}
		opts := []redlock.Option{
			redlock.WithClock(c.clock),
			redlock.WithNodeTimeout(r.nodeTimeout),
			redlock.WithRetryDelay(r.retryMin, r.retryMax),
		}
		if r.sc.Strategy == RedlockFencing {
			opts = append(opts, redlock.WithFencing())
		}
		if r.metrics != nil {
			opts = append(opts, redlock.WithObserver(r.metrics.observer()))
		}
		lc, err := redlock.New(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return r.primitive(lc, c)
	}
	if r.sc.Strategy == MajoritySemaphore {
		m := &majority{
			clock: c.clock, permits: strconv.Itoa(r.sc.Permits), owner: fmt.Sprintf("client%d", c.id),
			poll: r.d(100 * time.Millisecond), nodeTimeout: r.nodeTimeout,
		}
		for _, l := range c.links {
			m.rdbs = append(m.rdbs, r.redis(l))
		}
		return m, nil
	}
	return &naive{
		rdb:       r.redis(c.links[0]),
		clock:     c.clock,
		strategy:  r.sc.Strategy,
		owner:     fmt.Sprintf("client%d", c.id),
		poll:      r.poll,
		inRelease: c.inRelease,
	}, nil
}

// primitive returns client c's locker over lc: a candidate of the run's election, the run's
// semaphore or RWMutex side, or lc's plain Lock.
func (r *run) primitive(lc *redlock.Client, c *client) (locker, error) {
	switch {
	case r.sc.Strategy == Election:
		return newElectionLocker(lc, r.key, r.ttl, c)
	case r.sc.Permits > 0:
		sem, err := lc.Semaphore(r.key, r.sc.Permits)
		if err != nil {
			return nil, err
		}
		return redlockLocker{c: lc, acquire: holdLock(sem.Lock)}, nil
	case r.sc.RW:
		rw, err := lc.RWMutex(r.key)
		if err != nil {
			return nil, err
		}
		if r.reader(c) {
			return redlockLocker{c: lc, acquire: holdLock(rw.RLock)}, nil
		}
		return redlockLocker{c: lc, acquire: holdLock(rw.Lock)}, nil
	}
	lock := func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) { return lc.Lock(ctx, r.key, ttl) }
	return redlockLocker{c: lc, acquire: holdLock(lock)}, nil
}

// reader reports whether client c reads an RWMutex.
func (r *run) reader(c *client) bool { return r.sc.RW && c.id%2 == 1 }

// A locker is one client's lock, whatever the strategy.
type locker interface {
	// Lock blocks until it holds key or ctx is done.
	Lock(ctx context.Context, key string, ttl time.Duration) (holding, error)
	Close() error
}

// A holding is one acquisition.
type holding interface {
	// Until is the end of the validity on the holder's clock; ok is false when the strategy
	// promises none (the naive locks), and then the holder never checks.
	Until() (until time.Time, ok bool)
	Extend(ctx context.Context, ttl time.Duration) error
	Unlock(ctx context.Context) error
	// Fence is the acquisition's fencing token, 0 for strategies without one.
	Fence() uint64
}

// redlockLocker adapts redlock.Client: acquire takes what the run's strategy holds of the
// run's key (the lock, a permit of its semaphore, a side of its RWMutex, a term of its
// election).
type redlockLocker struct {
	c       *redlock.Client
	acquire func(ctx context.Context, ttl time.Duration) (holding, error)
}

func (r redlockLocker) Lock(ctx context.Context, _ string, ttl time.Duration) (holding, error) {
	return r.acquire(ctx, ttl)
}

func (r redlockLocker) Close() error { return r.c.Close() }

// holdLock makes take, a way to take a redlock.Lock, a redlockLocker's acquire.
func holdLock(take func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error)) func(context.Context, time.Duration) (holding, error) {
	return func(ctx context.Context, ttl time.Duration) (holding, error) {
		l, err := take(ctx, ttl)
		if err != nil {
			return nil, err
		}
		return redlockHolding{l}, nil
	}
}

type redlockHolding struct{ l *redlock.Lock }

func (h redlockHolding) Until() (time.Time, bool) { return h.l.Until(), true }
func (h redlockHolding) Extend(ctx context.Context, ttl time.Duration) error {
	return h.l.Extend(ctx, ttl)
}
func (h redlockHolding) Unlock(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h redlockHolding) Fence() uint64                    { return h.l.Fence() }

var errNoExtend = errors.New("simulate: this strategy cannot extend")

// naive is the single-node locks (GetsetTakeover, GetThenDel, SingleNode, GetCompareDel),
// written the way blog posts write them.
type naive struct {
	rdb      *redis.Client
	clock    *clientClock
	strategy Strategy
	owner    string        // names this client in tokens
	poll     time.Duration // a fixed sleep between attempts, as such locks do
	seq      int
	// inRelease is called between the GET and the DEL of a two-command release.
	inRelease func()
}

var compareAndDelete = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (n *naive) Lock(ctx context.Context, key string, ttl time.Duration) (holding, error) {
	for {
		h, err := n.try(ctx, key, ttl)
		if h != nil || err != nil && ctx.Err() != nil {
			return h, err
		}
		if err := n.clock.wait(ctx, n.poll); err != nil {
			return nil, err
		}
	}
}

func (n *naive) try(ctx context.Context, key string, ttl time.Duration) (holding, error) {
	switch n.strategy {
	case SingleNode, GetCompareDel:
		n.seq++
		token := fmt.Sprintf("%s-%d", n.owner, n.seq)
		ok, err := n.rdb.SetNX(ctx, key, token, ttl).Result()
		if err != nil || !ok {
			return nil, err
		}
		return &naiveHolding{n: n, key: key, value: token}, nil
	default: // the timestamp locks: GetsetTakeover, GetThenDel
		expiry := strconv.FormatInt(n.clock.now().Add(ttl).UnixMilli(), 10)
		px := ttl
		if n.strategy == GetThenDel {
			px = 0 // no expiry on the key: only the timestamp ends it
		}
		ok, err := n.rdb.SetNX(ctx, key, expiry, px).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &naiveHolding{n: n, key: key, value: expiry}, nil
		}
		current, err := n.rdb.Get(ctx, key).Result()
		if err != nil {
			return nil, nil // gone meanwhile, or the node failed: try again
		}
		if ms, err := strconv.ParseInt(current, 10, 64); err != nil || ms >= n.clock.now().UnixMilli() {
			return nil, nil // not expired by our clock
		}
		//lint:ignore SA1019 the seed's lock takes an expired lock over with GETSET, as it shows it
		old, err := n.rdb.GetSet(ctx, key, expiry).Result()
		if err != nil || old != current {
			return nil, nil
		}
		return &naiveHolding{n: n, key: key, value: expiry}, nil
	}
}

func (n *naive) Close() error { return nil }

type naiveHolding struct {
	n     *naive
	key   string
	value string
}

func (h *naiveHolding) Until() (time.Time, bool)                    { return time.Time{}, false }
func (h *naiveHolding) Extend(context.Context, time.Duration) error { return errNoExtend }
func (h *naiveHolding) Fence() uint64                               { return 0 }

func (h *naiveHolding) Unlock(ctx context.Context) error {
	rdb := h.n.rdb
	switch h.n.strategy {
	case GetThenDel: // anyone's value will do
		if v, err := rdb.Get(ctx, h.key).Result(); err != nil || v == "" {
			return err
		}
		h.n.inRelease()
		return rdb.Del(ctx, h.key).Err()
	case GetCompareDel: // the key may change hands between the two
		if v, err := rdb.Get(ctx, h.key).Result(); err != nil || v != h.value {
			return err
		}
		h.n.inRelease()
		return rdb.Del(ctx, h.key).Err()
	default:
		return compareAndDelete.Run(ctx, rdb, []string{h.key}, h.value).Err()
	}
}
