package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// redsync v4 and this library exclude each other on one key: both store a lock as a plain
// string holding the holder's token, set with SET NX on a majority, so that either refuses
// while the other holds it. Four lockers of each, every one over go-redis clients of its own
// as separate processes would be, take the key in turn for two seconds on five redis-servers
// of their own; two of this library's Clients call Lock, two poll with TryLock. In its critical
// section a holder checks that it is the only one and that a majority of the nodes hold its
// token, then holds for a moment. The TTL (8 s) outlasts the test, so that no lock expires
// while held: an overlap would be an error of one library or the other, not of the timing.
func TestExclusionWithRedsync(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, so run after the others
	// Launch, not StartN, which skips without redis-server unless REDLOCK_REQUIRE_REDIS is set:
	// make test runs this module without it, and a missing server must fail there.
	dir := t.TempDir()
	servers := make([]*redistest.Server, 5)
	for i := range servers {
		s, err := redistest.Launch(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Kill)
		servers[i] = s
	}
	addrs := redistest.Addrs(servers)
	probe := redistest.Clients(t, addrs...) // reads the key on every node, shared by all holders

	const (
		key    = "interop"
		each   = 4 // lockers of each library
		window = 2 * time.Second
		hold   = 500 * time.Microsecond
		rest   = 20 * time.Millisecond // after a release, so that the key is free part of the time
		poll   = 2 * time.Millisecond  // between two failed tries of redsync, or TryLock calls
	)
	var (
		holders    atomic.Int32
		overlaps   atomic.Int64 // holders found another holder
		unbacked   atomic.Int64 // holders whose token was not on a majority of the nodes
		mu         sync.Mutex
		unlockErrs []error // the lock then stays on some nodes till the TTL: slower, still safe
		acquired   struct{ redsync, lock, tryLock atomic.Int64 }
	)
	// critical is a holder's critical section; token is what its library stored on the nodes.
	critical := func(token string, count *atomic.Int64) {
		if holders.Add(1) != 1 {
			overlaps.Add(1)
		}
		count.Add(1)
		if holding(probe, key, token) < len(probe)/2+1 {
			unbacked.Add(1)
		}
		time.Sleep(hold)
		holders.Add(-1)
	}

	failedUnlock := func(library string, err error) {
		mu.Lock()
		defer mu.Unlock()
		unlockErrs = append(unlockErrs, fmt.Errorf("%s: %w", library, err))
	}

	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var wg sync.WaitGroup
	for i := range each {
		// redsync's default expiry is ttl, 8 s; its default pause of 50-250 ms between tries
		// would leave it few acquisitions against TryLock's polling on a busy machine.
		rs := newRedsync(redistest.Clients(t, addrs...), redsync.WithRetryDelay(poll))
		wg.Go(func() {
			for ctx.Err() == nil {
				h, err := rs.lock(ctx, key)
				if err != nil {
					continue // ctx ended, or 32 tries failed: try again until the window closes
				}
				critical(h.(*redsync.Mutex).Value(), &acquired.redsync)
				if err := rs.unlock(context.Background(), h); err != nil {
					failedUnlock("redsync", err)
				}
				sleep(ctx, rest)
			}
		})

		c, err := redlock.New(redistest.Clients(t, addrs...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		try := i%2 == 1
		wg.Go(func() {
			for ctx.Err() == nil {
				lock, count := c.Lock, &acquired.lock
				if try {
					lock, count = c.TryLock, &acquired.tryLock
				}
				l, err := lock(ctx, key, ttl)
				if err != nil {
					if try {
						sleep(ctx, poll)
					}
					continue // Lock fails only when ctx ends
				}
				critical(l.Token(), count)
				if err := l.Unlock(context.Background()); err != nil {
					failedUnlock("redlock", err)
				}
				sleep(ctx, rest)
			}
		})
	}
	wg.Wait()

	t.Logf("acquisitions in %v: redsync %d, redlock Lock %d, redlock TryLock %d",
		window, acquired.redsync.Load(), acquired.lock.Load(), acquired.tryLock.Load())
	if len(unlockErrs) > 0 {
		t.Logf("%d Unlock calls failed; the first: %v", len(unlockErrs), unlockErrs[0])
	}
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d times a holder found another holder in its critical section", n)
	}
	if n := unbacked.Load(); n > 0 {
		t.Errorf("%d times a holder's token was not on a majority of the nodes", n)
	}
	const least = 5 // acquisitions of each library, so that a pass is not for want of contention
	if rs, ours := acquired.redsync.Load(), acquired.lock.Load()+acquired.tryLock.Load(); rs < least || ours < least {
		t.Errorf("redsync acquired %d times and redlock %d, want at least %d each", rs, ours, least)
	}
}

// holding returns how many of the nodes hold token as the value of key.
func holding(nodes []redis.UniversalClient, key, token string) int {
	n := 0
	for _, c := range nodes {
		if v, err := c.Get(context.Background(), key).Result(); err == nil && v == token {
			n++
		}
	}
	return n
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
