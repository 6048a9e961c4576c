package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A clusterSetup runs the library on Redis Cluster, in one of its two modes.
type clusterSetup struct {
	// client returns a new Client with go-redis clients of its own, as another process has.
	client func(t *testing.T, opts ...redlock.Option) *redlock.Client
	// raw returns what node i stores a key in, and the hash tag its keys start with ("" when
	// the node is a cluster of its own).
	raw func(i int) (redis.UniversalClient, string)
	// cluster returns the cluster that node i is on.
	cluster func(i int) *redistest.Cluster
	// keys are the keys (and prefixes) the setup runs on: NewCluster refuses a prefix with a
	// hash tag, which would put every vote in one slot.
	keys []clusterKey
}

// Three clusters of three masters each, one node each.
func clustersAsNodes(t *testing.T) clusterSetup {
	cls := make([]*redistest.Cluster, 3)
	raws := make([]redis.UniversalClient, 3)
	for i := range cls {
		cls[i] = redistest.StartCluster(t, 3)
		raws[i] = cls[i].Client(t)
	}
	return clusterSetup{
		client: func(t *testing.T, opts ...redlock.Option) *redlock.Client {
			nodes := make([]redis.UniversalClient, len(cls))
			for i, cl := range cls {
				nodes[i] = cl.Client(t)
			}
			return newTestClient(t, func(opts []redlock.Option) (*redlock.Client, error) { return redlock.New(nodes, opts...) }, opts)
		},
		raw:     func(i int) (redis.UniversalClient, string) { return raws[i], "" },
		cluster: func(i int) *redistest.Cluster { return cls[i] },
		keys:    clusterKeys,
	}
}

// One cluster of three masters, three votes.
func votesOnOneCluster(t *testing.T) clusterSetup {
	cl := redistest.StartCluster(t, 3)
	raw := cl.Client(t)
	votes, err := keyslot.Votes(context.Background(), raw, 3)
	if err != nil {
		t.Fatal(err)
	}
	return clusterSetup{
		client: func(t *testing.T, opts ...redlock.Option) *redlock.Client {
			cc := cl.Client(t)
			return newTestClient(t, func(opts []redlock.Option) (*redlock.Client, error) {
				return redlock.NewCluster(context.Background(), cc, 3, opts...)
			}, opts)
		},
		raw:     func(i int) (redis.UniversalClient, string) { return raw, "{" + votes[i].Tag + "}" },
		cluster: func(int) *redistest.Cluster { return cl },
		keys: slices.DeleteFunc(slices.Clone(clusterKeys), func(k clusterKey) bool {
			return strings.Contains(k.prefix, "{")
		}),
	}
}

// newTestClient makes a Client with a node timeout generous enough for a loaded machine, unless
// opts set another; t.Cleanup closes it.
func newTestClient(t *testing.T, make func([]redlock.Option) (*redlock.Client, error), opts []redlock.Option) *redlock.Client {
	t.Helper()
	c, err := make(append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// holders returns the token each node stores under the key (stored form), "" where none.
func (s clusterSetup) holders(t *testing.T, stored string) []string {
	t.Helper()
	out := make([]string, 3)
	for i := range out {
		rc, tag := s.raw(i)
		v, err := rc.Get(context.Background(), tag+stored).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

func TestClusterClientsAsNodes(t *testing.T) {
	t.Parallel()
	testCluster(t, clustersAsNodes(t))
}

func TestNewClusterVotes(t *testing.T) {
	t.Parallel()
	testCluster(t, votesOnOneCluster(t))
}

// Keys that break a lock whose companion keys are not named in the key's slot.
type clusterKey struct{ prefix, key string }

var clusterKeys = []clusterKey{
	{"", "{user:7}:profile"},
	{"app:", "a{b}c{d}"},
	{"{tenant}:", "x{}y{z}"},
	{"", "a}b"},
	{"", "orders"},
}

func testCluster(t *testing.T, s clusterSetup) {
	ctx := context.Background()

	// 16 goroutines of 4 Clients take turns on each key; no two critical sections overlap, and
	// the contended path (the waiters' queue, the announcements) works in every slot.
	t.Run("exclusion", func(t *testing.T) {
		for _, k := range s.keys {
			t.Run(k.prefix+k.key, func(t *testing.T) {
				// A hand-over that no longer wakes the next waiter fails by the deadline.
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				var inside, overlaps atomic.Int32
				count := 0
				var wg sync.WaitGroup
				for range 4 {
					c := s.client(t, redlock.WithKeyPrefix(k.prefix), redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
					for range 4 {
						wg.Go(func() {
							for range 5 {
								l, err := c.Lock(ctx, k.key, 10*time.Second)
								if err != nil {
									t.Error(err)
									return
								}
								if inside.Add(1) > 1 {
									overlaps.Add(1)
								}
								count++
								inside.Add(-1)
								if err := l.Unlock(ctx); err != nil {
									t.Error(err)
								}
							}
						})
					}
				}
				wg.Wait()
				if overlaps.Load() != 0 || count != 16*5 {
					t.Fatalf("%d overlapping critical sections, count %d of %d", overlaps.Load(), count, 16*5)
				}
				redistest.Eventually(t, "no key left on any node", func() bool {
					return fmt.Sprint(s.holders(t, k.prefix+k.key)) == "[  ]"
				})
			})
		}
	})

	// An attempt that won one node and lost two rolls back the node it won.
	t.Run("rollback", func(t *testing.T) {
		const key = "{user:8}:cart"
		for i := range 2 {
			rc, tag := s.raw(i)
			if err := rc.Set(ctx, tag+key, "someone-else", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		c := s.client(t)
		if _, err := c.TryLock(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock on a key held on 2 of 3 nodes: %v", err)
		}
		redistest.Eventually(t, "the won node rolled back", func() bool { return s.holders(t, key)[2] == "" })
	})

	// A lock expires with its ttl; then its holder can no longer release the next owner's.
	t.Run("expiry-and-ownership", func(t *testing.T) {
		const key = "a}b:expiry"
		c1, c2 := s.client(t), s.client(t)
		l1, err := c1.TryLock(ctx, key, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.TryLock(ctx, key, time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock of a held key: %v", err)
		}
		redistest.Receive(t, "Lost closed after the validity", l1.Lost())
		var l2 *redlock.Lock
		redistest.Eventually(t, "the key expired on the nodes", func() bool {
			l2, err = c2.TryLock(ctx, key, 10*time.Second)
			return err == nil
		})
		if err := l1.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Unlock by the expired holder: %v", err)
		}
		// The new holder's token stands on a quorum still. (A node may hold nothing: the old
		// key had not expired there yet when the new holder won the other two, and the old
		// holder's Unlock removed its own key.)
		h := s.holders(t, key)
		if n := slices.Index(h, l2.Token()); slices.ContainsFunc(h, func(v string) bool { return v != "" && v != l2.Token() }) ||
			n < 0 || slices.Index(h[n+1:], l2.Token()) < 0 {
			t.Fatalf("after the expired holder's Unlock, the nodes hold %q; the new holder's token is %q", h, l2.Token())
		}
		if err := l2.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// A release wakes a waiter of another Client by announcement: the fallback timer is an hour.
	t.Run("hand-off", func(t *testing.T) {
		const key = "{user:9}:hand-off"
		hour := redlock.WithRetryDelay(time.Hour, time.Hour)
		c1, c2 := s.client(t, hour), s.client(t, hour)
		l1, err := c1.Lock(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			l2, err := c2.Lock(ctx, key, 10*time.Second)
			if err == nil {
				err = l2.Unlock(ctx)
			}
			got <- err
		}()
		// Its place on each vote has a lease too: a message that a master publishes is counted
		// only by the Clients that listen on that master, so the count cannot tell whether the
		// waiter hears it.
		queue, leases := companion("queue", key), companion("leases", key)
		redistest.Eventually(t, "the waiter queued on a quorum, with a lease", func() bool {
			n := 0
			for i := range 3 {
				rc, tag := s.raw(i)
				line := rc.ZRange(ctx, tag+queue, 0, -1).Val()
				if len(line) == 1 && rc.Exists(ctx, tag+leases+":"+line[0]).Val() == 1 {
					n++
				}
			}
			return n >= 2
		})
		if err := l1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := redistest.Receive(t, "the waiter returns after the release", got); err != nil {
			t.Fatalf("the waiter, after the release: %v", err)
		}
	})

	// Fencing tokens strictly increase from one holder to the next, across Clients.
	t.Run("fencing", func(t *testing.T) {
		const key = "{user:10}:fenced"
		cs := []*redlock.Client{s.client(t, redlock.WithFencing()), s.client(t, redlock.WithFencing())}
		var last uint64
		for i := range 10 {
			l, err := cs[i%2].Lock(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= last {
				t.Fatalf("acquisition %d: fence %d after %d", i, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	// The slot of a held key moves to another master while it is held: nobody else gets the
	// lock, during the move or after it, and its holder extends and releases it.
	t.Run("slot-migration", func(t *testing.T) {
		const key = "{user:11}:moved"
		c1, c2 := s.client(t), s.client(t)
		l, err := c1.Lock(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, tag := s.raw(0)
		cl := s.cluster(0)
		from := cl.Owner(t, tag+key)
		to := cl.Masters[0]
		if to == from {
			to = cl.Masters[1]
		}
		refused := func(when string) {
			t.Helper()
			if _, err := c2.TryLock(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("TryLock of the held key %s: %v", when, err)
			}
		}
		cl.Migrate(t, tag+key, to, func() { refused("while its slot migrates") })
		if cl.Owner(t, tag+key) != to {
			t.Fatal("the slot did not move")
		}
		refused("after its slot moved")
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		l2, err := c2.TryLock(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l2.Unlock(ctx)
	})

	// The semaphore, the RWMutex, LockAll and Resume, on every key: their keys are named in
	// the key's slot, and their waiting calls are woken by releases (the fallback timer is an
	// hour).
	t.Run("primitives", func(t *testing.T) {
		for _, k := range s.keys {
			t.Run(k.prefix+k.key, func(t *testing.T) {
				hour := redlock.WithRetryDelay(time.Hour, time.Hour)
				w, watch := watchWaits()
				c1 := s.client(t, redlock.WithKeyPrefix(k.prefix), hour)
				c2 := s.client(t, redlock.WithKeyPrefix(k.prefix), hour, watch)
				testPrimitivesOn(t, c1, c2, w, k.key)
			})
		}
		// LockAll of keys in different slots: an error on cluster nodes, where a script
		// touches one slot; NewCluster's votes put every key of a vote in the vote's slot.
		c := s.client(t)
		all, err := c.TryLockAll(ctx, []string{"stock", "invoice"}, 10*time.Second)
		if _, tag := s.raw(0); tag == "" {
			if err == nil || !strings.Contains(err.Error(), "hash tag") {
				t.Fatalf("LockAll across slots on cluster nodes: %v", err)
			}
			all, err = c.TryLockAll(ctx, []string{"{order:7}:stock", "{order:7}:invoice"}, 10*time.Second)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Both keys on a quorum, and on each node both or neither (once the replies after the
		// quorum are in: two GETs are not one atomic read).
		redistest.Eventually(t, "both keys on a quorum, both or neither on each node", func() bool {
			stock, invoice := s.holders(t, all.Keys()[0]), s.holders(t, all.Keys()[1])
			n := 0
			for i := range stock {
				if stock[i] != invoice[i] {
					return false
				}
				if stock[i] == all.Token() {
					n++
				}
			}
			return n >= 2
		})
		if err := all.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// With the master serving node 0's copy of the key stopped (SIGSTOP), the lock is still
	// acquired, extended and released on the other two.
	t.Run("stopped-master", func(t *testing.T) {
		const key = "{user:12}:stopped"
		_, tag := s.raw(0)
		cl := s.cluster(0)
		m := cl.Owner(t, tag+key)
		c := s.client(t)
		m.Pause(t)
		l, err := c.TryLock(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		m.Resume()
	})
}

// NewCluster refuses what cannot give the votes asked for, naming why.
func TestNewClusterErrors(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t) // answers as a cluster of one master
	one := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}})
	t.Cleanup(func() { one.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // nothing listens there now
	gone := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{l.Addr().String()}, MaxRetries: -1})
	t.Cleanup(func() { gone.Close() })

	for _, tc := range []struct {
		name    string
		cluster *redis.ClusterClient
		votes   int
		opts    []redlock.Option
		want    string
	}{
		{"nil cluster", nil, 3, nil, "nil cluster client"},
		{"no votes", one, 0, nil, "0 votes: want at least 1"},
		{"negative votes", one, -2, nil, "-2 votes: want at least 1"},
		{"bad option", one, 1, []redlock.Option{redlock.WithDriftFactor(2)}, "drift factor 2 out of range"},
		{"prefix with a hash tag", one, 1, []redlock.Option{redlock.WithKeyPrefix("{tenant}:")}, "would put every vote in one slot"},
		{"more votes than masters", one, 2, nil, "2 votes need as many masters serving slots; the cluster has 1"},
		{"unreachable", gone, 1, nil, "read the cluster's slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			c, err := redlock.NewCluster(ctx, tc.cluster, tc.votes, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "redlock: ") {
				if c != nil {
					c.Close()
				}
				t.Fatalf("NewCluster: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// testPrimitivesOn runs each primitive of c1 on key, with c2 as another process, whose waits w
// reports; both wait for releases by announcement only, and every call of theirs ends within
// the test's deadline.
func testPrimitivesOn(t *testing.T, c1, c2 *redlock.Client, w waits, key string) {
	t.Helper()
	ctx := deadline(t)
	// waited runs acquire in the background and returns a channel that receives its error
	// once it acquired and released, after the caller's release.
	waited := func(acquire func(context.Context, time.Duration) (*redlock.Lock, error)) <-chan error {
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			l, err := acquire(ctx, 10*time.Second)
			if err == nil {
				err = l.Unlock(ctx)
			}
			got <- err
		}()
		return got
	}
	// The waiter failed once, listens, and its attempt as a waiter was decided.
	settle := func() { w.await(t) }

	sem1 := semaphore(t, c1, key, 2)
	sem2 := semaphore(t, c2, key, 2)
	a, err := sem1.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sem2.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem2.TryLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a third holder of 2 permits: %v", err)
	}
	got := waited(sem2.Lock)
	settle()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the semaphore's waiter returns", got); err != nil {
		t.Fatalf("the semaphore's waiter: %v", err)
	}
	b.Unlock(ctx)

	rw1 := rwMutex(t, c1, key)
	rw2 := rwMutex(t, c2, key)
	r1, err := rw1.RLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw2.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	got = waited(rw2.Lock)
	settle()
	if _, err := rw1.TryRLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a reader behind a waiting writer: %v", err)
	}
	r1.Unlock(ctx)
	r2.Unlock(ctx)
	if err := redistest.Receive(t, "the waiting writer returns", got); err != nil {
		t.Fatalf("the waiting writer: %v", err)
	}

	held, err := c1.Lock(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got = waited(func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) {
		return c2.LockAll(ctx, []string{key}, ttl)
	})
	settle()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "LockAll behind Lock returns", got); err != nil {
		t.Fatalf("LockAll behind Lock: %v", err)
	}

	l, err := c1.Lock(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c2.Resume(ctx, key, l.Token(), 20*time.Second)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := r.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Resume(ctx, key, l.Token(), 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Resume after Unlock: %v", err)
	}
}
