package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// The cases of the table, in order. Each uses keys of its own on the shared nodes, and leaves
// them running (a case that stops a node resumes it when it ends).
var cases = []struct {
	name string
	run  func(t *testing.T, s suite)
}{
	{"exclusion", exclusion},
	{"rollback", rollback},
	{"expiry", expiry},
	{"wake-by-release", wakeByRelease},
	{"fencing", fencing},
	{"primitives", primitives},
	{"stopped-node", stoppedNode},
	{"slow-node", slowNode},
	{"close-bound", closeBound},
	{"server-errors", serverErrors},
	{"bad-replies", badReplies},
}

const (
	ttl  = 10 * time.Second // long enough that no lock of the table expires unless it means to
	wait = 20 * time.Second // the deadline of every wait
)

// client returns a new Client over n, with a node timeout that a busy machine keeps unless
// opts set another; it is closed when t ends.
func (s suite) client(t *testing.T, n nodes, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := s.connect(t, n.addrs, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// holders returns what each node stores under key, "" where nothing.
func (n nodes) holders(t *testing.T, key string) []string {
	t.Helper()
	out := make([]string, len(n.raw))
	for i, rc := range n.raw {
		v, err := rc.Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d: GET %s: %v", i, key, err)
		}
		out[i] = v
	}
	return out
}

// empty reports whether no node stores key.
func (n nodes) empty(t *testing.T, key string) bool {
	return !slices.ContainsFunc(n.holders(t, key), func(v string) bool { return v != "" })
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// 12 goroutines of 3 Clients take turns on one key; no two critical sections overlap.
func exclusion(t *testing.T, s suite) {
	ctx := deadline(t)
	const key, clients, each, turns = "exclusion", 3, 4, 5
	var inside, overlaps, count atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		c := s.client(t, s.shared, redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
		for range each {
			wg.Go(func() {
				for range turns {
					l, err := c.Lock(ctx, key, ttl)
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					count.Add(1)
					time.Sleep(200 * time.Microsecond) // a critical section long enough to be overlapped
					inside.Add(-1)
					if err := l.Unlock(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	if overlaps.Load() != 0 || count.Load() != clients*each*turns {
		t.Fatalf("%d overlapping critical sections; %d of %d acquisitions", overlaps.Load(), count.Load(), clients*each*turns)
	}
	redistest.Eventually(t, "no key left on any node", func() bool { return s.shared.empty(t, key) })
}

// An attempt that won one node and lost two rolls the node it won back; the Observer hears
// each node's answer: taken, taken, ok.
func rollback(t *testing.T, s suite) {
	ctx := deadline(t)
	const key = "rollback"
	for i := range 2 {
		if err := s.shared.raw[i].Set(ctx, key, "someone-else", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	heard := make(map[int]locktrace.NodeOutcome)
	obs := locktrace.Observer{NodeReply: func(_ context.Context, r locktrace.NodeReply) {
		if r.Op == locktrace.NodeAcquire {
			mu.Lock()
			heard[r.Node] = r.Outcome
			mu.Unlock()
		}
	}}
	c := s.client(t, s.shared, redlock.WithObserver(obs))
	if _, err := c.TryLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a key held on 2 of 3 nodes: %v", err)
	}
	// Once node 2 has said yes (the Observer heard it), the key must go from it again.
	redistest.Eventually(t, "every node answered, and the won node rolled back", func() bool {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		return n == 3 && s.shared.holders(t, key)[2] == ""
	})
	mu.Lock()
	defer mu.Unlock()
	if want := map[int]locktrace.NodeOutcome{0: locktrace.NodeTaken, 1: locktrace.NodeTaken, 2: locktrace.NodeOK}; fmt.Sprint(heard) != fmt.Sprint(want) {
		t.Fatalf("the Observer heard %v, want %v", heard, want)
	}
}

// A lock expires with its ttl; then its holder cannot release the next owner's lock.
func expiry(t *testing.T, s suite) {
	ctx := deadline(t)
	const key = "expiry"
	c1, c2 := s.client(t, s.shared), s.client(t, s.shared)
	l1, err := c1.TryLock(ctx, key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.TryLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held key: %v", err)
	}
	select {
	case <-l1.Lost():
	case <-ctx.Done():
		t.Fatal("the lock did not end with its validity")
	}
	var l2 *redlock.Lock
	redistest.Eventually(t, "the key expired on the nodes", func() bool {
		l2, err = c2.TryLock(ctx, key, ttl)
		return err == nil
	})
	if err := l1.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock by the expired holder: %v, want ErrNotHeld", err)
	}
	if n := strings.Count(strings.Join(s.shared.holders(t, key), " "), l2.Token()); n < 2 {
		t.Fatalf("after the expired holder's Unlock, %d nodes hold the new holder's token", n)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A release wakes a waiter of another Client by its announcement alone: the waiter's retry
// timer is an hour.
func wakeByRelease(t *testing.T, s suite) {
	ctx := deadline(t)
	const key = "wake"
	hour := redlock.WithRetryDelay(time.Hour, time.Hour)
	c1, c2 := s.client(t, s.shared, hour), s.client(t, s.shared, hour)
	l1, err := c1.Lock(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := waited(ctx, func(ctx context.Context) (*redlock.Lock, error) { return c2.Lock(ctx, key, ttl) })
	settle()
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter, after the release: %v", err)
	}
}

// waited runs acquire in the background and returns a channel that receives its error once it
// acquired and released.
func waited(ctx context.Context, acquire func(context.Context) (*redlock.Lock, error)) <-chan error {
	got := make(chan error, 1)
	go func() {
		l, err := acquire(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	return got
}

// settle gives a waiter started just now the time to fail once and listen.
func settle() { time.Sleep(200 * time.Millisecond) }

// Fencing tokens strictly increase from one holder to the next, across Clients.
func fencing(t *testing.T, s suite) {
	ctx := deadline(t)
	cs := []*redlock.Client{s.client(t, s.shared, redlock.WithFencing()), s.client(t, s.shared, redlock.WithFencing())}
	var last uint64
	for i := range 6 {
		l, err := cs[i%2].Lock(ctx, "fenced", ttl)
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
}
