package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlockrueidis"
	"github.com/quorumlock/redlock/redlockvalkey"
)

// This library over go-redis, over rueidis, and over nodes of rueidis and valkey-go mixed in
// one Client, and redsync over its rueidis pool, exclude one another on one key: all store the
// lock as a plain string holding the holder's token, set with SET NX on a majority. Eight
// lockers, two of each (this library's: one calling Lock, one polling with TryLock), every one over clients of its own as separate processes would be,
// take the key in turn for two seconds on five redis-servers of their own. In its critical
// section a holder checks that it is the only one and that a majority of the nodes hold its
// token. The TTL (8 s) outlasts the test: an overlap would be a library's error, not timing's.
func TestExclusionAcrossClients(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, so run after the others
	dir := t.TempDir()
	servers := make([]*redistest.Server, 5)
	for i := range servers {
		s, err := redistest.Launch(dir) // not StartN: a missing redis-server must fail here
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Kill)
		servers[i] = s
	}
	addrs := redistest.Addrs(servers)
	probe := redistest.Clients(t, addrs...)

	const (
		key    = "interop"
		window = 2 * time.Second  // at least; longer until every library acquired least times
		most   = 15 * time.Second // at most
		least  = 3
		hold   = 500 * time.Microsecond
		rest   = 20 * time.Millisecond // after a release, so that the key is free part of the time
		poll   = 2 * time.Millisecond  // redsync's pause between two failed tries
	)
	lockers := map[string]func(t *testing.T) locker{
		"redlock over go-redis": func(t *testing.T) locker { return held(t)(redlock.New(redistest.Clients(t, addrs...))) },
		"redlock over rueidis":  func(t *testing.T) locker { return held(t)(redlock.NewNodes(rueidisNodes(t, addrs))) },
		"redlock over rueidis and valkey-go": func(t *testing.T) locker {
			nodes := rueidisNodes(t, addrs)
			for i := 1; i < len(nodes); i += 2 {
				c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addrs[i]}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				nodes[i] = redlockvalkey.Node(c)
			}
			return held(t)(redlock.NewNodes(nodes))
		},
		"redsync over rueidis": func(t *testing.T) locker {
			pools := make([]redsyncredis.Pool, len(addrs))
			for i, c := range rueidisClientsT(t, addrs) {
				pools[i] = redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c))
			}
			return redsyncLocker{redsync.New(pools...), []redsync.Option{redsync.WithRetryDelay(poll)}}
		},
	}

	var holders atomic.Int32
	var overlaps, unbacked atomic.Int64
	var mu sync.Mutex
	acquired := make(map[string]int)
	errs := make(map[string]error)
	ctx, cancel := context.WithTimeout(context.Background(), most)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	// The window closes once it lasted window and every library acquired least times: a busy
	// machine (and -race) can leave one library few turns in a short window.
	wg.Go(func() {
		for ctx.Err() == nil {
			sleep(ctx, 50*time.Millisecond)
			mu.Lock()
			enough := time.Since(start) >= window
			for name := range lockers {
				enough = enough && acquired[name] >= least
			}
			mu.Unlock()
			if enough {
				cancel()
			}
		}
	})
	for name, make := range lockers {
		for i := range 2 {
			l := make(t)
			t.Cleanup(l.close)
			lock := l.lock
			if o, ok := l.(ours); ok && i == 1 {
				// One of each two polls with TryLock: Lock calls wait in line on the nodes, and
				// a release hands the key to the first in line, which redsync's SET NX cannot
				// join, so that waiting Lock calls alone would leave redsync little.
				lock = func(ctx context.Context, key string) (any, error) { return o.c.TryLock(ctx, key, ttl) }
			}
			wg.Go(func() {
				for ctx.Err() == nil {
					h, err := lock(ctx, key)
					if err != nil {
						mu.Lock()
						if errs[name] == nil && ctx.Err() == nil {
							errs[name] = err
						}
						mu.Unlock()
						sleep(ctx, poll) // refused, ctx ended, or redsync's tries ran out: again until the window closes
						continue
					}
					if holders.Add(1) != 1 {
						overlaps.Add(1)
					}
					if holding(probe, key, token(h)) < len(probe)/2+1 {
						unbacked.Add(1)
					}
					time.Sleep(hold)
					holders.Add(-1)
					mu.Lock()
					acquired[name]++
					mu.Unlock()
					l.unlock(context.Background(), h) // a failed Unlock leaves the key to its TTL: slower, still safe
					sleep(ctx, rest)
				}
			})
		}
	}
	wg.Wait()

	t.Logf("acquisitions in %v: %v", time.Since(start).Round(time.Millisecond), acquired)
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d times a holder found another holder in its critical section", n)
	}
	if n := unbacked.Load(); n > 0 {
		t.Errorf("%d times a holder's token was not on a majority of the nodes", n)
	}
	for name := range lockers {
		if acquired[name] < least { // so that a pass is not for want of contention
			t.Errorf("%s acquired %d times in %v, want at least %d; its first error: %v", name, acquired[name], most, least, errs[name])
		}
	}
}

// token returns what a locker's lock stored on the nodes.
func token(h any) string {
	switch h := h.(type) {
	case *redlock.Lock:
		return h.Token()
	case *redsync.Mutex:
		return h.Value()
	}
	panic(fmt.Sprintf("bench: no token in %T", h))
}

// held returns a function that makes a locker of a new Client, failing t on its error; the
// locker's close closes the Client.
func held(t *testing.T) func(*redlock.Client, error) locker {
	return func(c *redlock.Client, err error) locker {
		if err != nil {
			t.Fatal(err)
		}
		return ours{c, ttl}
	}
}

// rueidisNodes returns a node over a rueidis client of its own for each address.
func rueidisNodes(t *testing.T, addrs []string) []driver.Node {
	nodes := make([]driver.Node, len(addrs))
	for i, c := range rueidisClientsT(t, addrs) {
		nodes[i] = redlockrueidis.Node(c)
	}
	return nodes
}

// rueidisClientsT returns a rueidis client with rueidis's defaults for each address, closed
// when t ends.
func rueidisClientsT(t testing.TB, addrs []string) []rueidis.Client {
	t.Helper()
	cs := make([]rueidis.Client, len(addrs))
	for i, a := range addrs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		cs[i] = c
	}
	return cs
}
