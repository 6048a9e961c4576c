package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// holders are the commands that a semaphore's holders and an RWMutex's readers share: each
// node keeps them in one sorted set, and a release announces the name wake while the mark
// watch says that a call waits.
type holders struct{ set, wake, watch string }

func (h holders) extend(token string, ttl time.Duration) command {
	return run(wire.HoldersExtendScript, wire.Extend{Key: h.set, Token: token, TTL: ttl})
}

func (h holders) release(token, channel, _ string) command {
	return run(wire.HoldersReleaseScript, wire.HoldersRelease{Holders: h.set, Watch: h.watch, Token: token, Channel: channel, Announce: h.wake})
}

// rollback is silent: holders stand in no line, and try again at the retry delay.
func (h holders) rollback(a attempt, _ string) command { return h.release(a.token, "", "") }

func (holders) abandon(string, string) (command, bool) { return nil, false }

// semaphoreOps are the commands of a semaphore of permits.
type semaphoreOps struct {
	holders
	permits int
}

func (o semaphoreOps) acquire(a attempt) command {
	return run(wire.SemaphoreScript, wire.SemaphoreAcquire{Keys: wire.SemaphoreKeys{Holders: o.set, Watch: o.watch}, Token: a.token, TTL: a.ttl,
		Permits: o.permits, Watch: wire.Watching(a.waiter, a.lease)})
}

func (o semaphoreOps) claim(token string, ttl time.Duration) command {
	return o.acquire(attempt{token: token, ttl: ttl})
}

// A Semaphore admits at most a fixed number of holders at once, its permits, across the
// Client's nodes. Each node keeps the semaphore's live holders in one sorted set (named as
// WithKeyPrefix says), and admits a holder
// while it has fewer than permits of them; it decides expiry by its own clock. A holder must be
// admitted by Quorum nodes. Every user of one semaphore must give the same permits.
//
// A semaphore does not exclude a Lock, RWMutex or LockAll of the same key: its keys are its own.
type Semaphore struct {
	c *Client
	s *spec
}

// Semaphore returns the semaphore of permits ≥ 1 named key. It sends nothing.
func (c *Client) Semaphore(key string, permits int) (*Semaphore, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if permits < 1 {
		return nil, fmt.Errorf("redlock: semaphore of %d permits; it needs at least 1", permits)
	}
	keys := c.opts.names.Semaphore(key)
	return &Semaphore{c: c, s: &spec{kind: locktrace.KindSemaphore, key: key, need: quorum.Permits(len(c.nodes), permits),
		wake: []string{keys.Holders}, ops: semaphoreOps{holders{set: keys.Holders, wake: keys.Holders, watch: keys.Watch}, permits}}}, nil
}

// Quorum returns how many nodes a holder must hold: floor(permits*N/(permits+1)) + 1 of the N
// nodes, at most N. A majority is not enough once permits ≥ 2: with N = 3 and 2 permits, holders
// of nodes {1,2}, {2,3} and {1,3} each have a majority while no node has more than 2, and 3
// hold the semaphore. With Quorum nodes each, permits+1 holders would need more places than the
// nodes have. The price is fault tolerance, which shrinks as permits grow: of 5 nodes, a
// semaphore of 1 permit (a mutex) works with 2 nodes down, of 2 or 3 permits with 1 down, of 4
// or more with none down. More nodes buy it back: of 9 nodes, 2 permits need 7 (2 may be down).
func (s *Semaphore) Quorum() int { return s.s.need }

// Lock takes a permit for ttl, waiting until one is free, ctx is done or the Client is closed,
// as Client.Lock waits: a release wakes the waiters at once, WithRetryDelay is the fallback.
// Extend and Unlock of the returned Lock need Quorum nodes; its Fence is 0. A permit never
// re-enters: with a context that carries one (Lock.Context), Lock takes a second.
func (s *Semaphore) Lock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return s.c.lock(ctx, s.s, ttl)
}

// TryLock makes exactly one attempt to take a permit for ttl; it fails with ErrNotAcquired.
func (s *Semaphore) TryLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return s.c.try(ctx, s.s, ttl)
}

// Do takes a permit like Lock, runs fn and releases the permit when fn returns, extending it
// while fn runs, as Client.Do does for a key.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return s.c.do(ctx, s.s, ttl, fn)
}
