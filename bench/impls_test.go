package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// A locker is one library under test. held is whatever its lock call returns (a pointer, so
// that carrying it in an interface costs no allocation); close waits for the goroutines the
// library left running.
type locker interface {
	lock(ctx context.Context, key string) (held any, err error)
	unlock(ctx context.Context, held any) error
	close()
}

// An impl builds a locker over the given nodes.
type impl struct {
	name string
	make func(b *testing.B, nodes []redis.UniversalClient) locker
}

var (
	implFloor           = impl{"floor", newFloorLocker}
	implOurs            = oursImpl(ttl)
	implRedsync         = redsyncImpl(ttl)
	implRedsyncFailFast = redsyncFailFastImpl(ttl)
	implRedislock       = impl{"redislock-1node", func(b *testing.B, nodes []redis.UniversalClient) locker {
		return redislockLocker{redislock.New(nodes[0])}
	}}
)

// oursImpl is this library with its default options, locking for d.
func oursImpl(d time.Duration) impl {
	return impl{"redlock", func(b *testing.B, nodes []redis.UniversalClient) locker {
		c, err := redlock.New(nodes)
		if err != nil {
			b.Fatal(err)
		}
		return ours{c, d}
	}}
}

// redsyncImpl is redsync with an expiry of d (its default is 8 s, the benchmarks' ttl);
// redsyncFailFastImpl adds WithFailFast(true).
func redsyncImpl(d time.Duration) impl {
	return impl{"redsync", func(b *testing.B, nodes []redis.UniversalClient) locker {
		return newRedsync(nodes, redsync.WithExpiry(d))
	}}
}

func redsyncFailFastImpl(d time.Duration) impl {
	return impl{"redsync-failfast", func(b *testing.B, nodes []redis.UniversalClient) locker {
		return newRedsync(nodes, redsync.WithExpiry(d), redsync.WithFailFast(true))
	}}
}

// ours is this library, locking for ttl.
type ours struct {
	c   *redlock.Client
	ttl time.Duration
}

func (o ours) lock(ctx context.Context, key string) (any, error) { return o.c.Lock(ctx, key, o.ttl) }
func (o ours) unlock(ctx context.Context, h any) error           { return h.(*redlock.Lock).Unlock(ctx) }
func (o ours) close()                                            { o.c.Close() }

// redsyncLocker is redsync v4 over its go-redis v9 pool, one mutex an acquisition as its
// README shows, with its defaults (8 s expiry, 32 tries 50-250 ms apart) changed by opts.
type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
}

func newRedsync(nodes []redis.UniversalClient, opts ...redsync.Option) redsyncLocker {
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = goredis.NewPool(n)
	}
	return redsyncLocker{redsync.New(pools...), opts}
}

func (r redsyncLocker) lock(ctx context.Context, key string) (any, error) {
	m := r.rs.NewMutex(key, r.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

var errRedsyncNotHeld = errors.New("redsync: unlock without a quorum")

func (r redsyncLocker) unlock(ctx context.Context, h any) error {
	ok, err := h.(*redsync.Mutex).UnlockContext(ctx)
	if !ok && err == nil {
		err = errRedsyncNotHeld
	}
	return err
}

func (r redsyncLocker) close() {}

// redislockLocker is bsm/redislock on one node, without retries (the key is free).
type redislockLocker struct{ c *redislock.Client }

func (r redislockLocker) lock(ctx context.Context, key string) (any, error) {
	return r.c.Obtain(ctx, key, ttl, nil)
}
func (r redislockLocker) unlock(ctx context.Context, h any) error {
	return h.(*redislock.Lock).Release(ctx)
}
func (r redislockLocker) close() {}
