package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// realCluster starts five redis-server processes and a Client over go-redis clients built with
// go-redis's defaults, as users build them. The node timeout is a generous second (a loaded CI
// machine must not fail a test by missing 100ms) unless opts set another.
func realCluster(t *testing.T, opts ...redlock.Option) ([]*redistest.Server, []redis.UniversalClient, *redlock.Client) {
	t.Helper()
	ss := redistest.StartN(t, 5)
	nodes := redistest.Clients(t, redistest.Addrs(ss)...)
	opts = append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ss, nodes, c
}

// 16 goroutines x 50 rounds of lock, read, write, unlock on a counter kept in Redis: the end
// value is exact, so no two critical sections overlapped.
func TestRealServersSharedCounter(t *testing.T) {
	t.Parallel()
	_, nodes, c := realCluster(t, redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
	store := nodes[0]
	// A few seconds on 2 cores: a hand-over that no longer wakes the next waiter fails by the
	// deadline rather than crawling on the waiters' timers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				l, err := c.Lock(ctx, "counter-lock", 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				v, err := store.Get(ctx, "counter").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Error(err)
				}
				if err := store.Set(ctx, "counter", v+1, 0).Err(); err != nil {
					t.Error(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, err := store.Get(ctx, "counter").Int(); err != nil || got != workers*rounds {
		t.Fatalf("counter = %d, %v; want %d", got, err, workers*rounds)
	}
}

// With two of five nodes stopped (SIGSTOP), Lock, Extend and Unlock still succeed, and they do
// not wait for the stopped nodes: the node timeout is an hour, so returning at all while the
// nodes are still stopped proves it.
func TestRealServersTwoStoppedNodesDoNotDelay(t *testing.T) {
	ss, nodes, c := realCluster(t, redlock.WithNodeTimeout(time.Hour))
	ss[1].Pause(t)
	ss[3].Pause(t)
	ctx := context.Background()
	l, err := c.Lock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 4} {
		if n, err := nodes[i].Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Fatalf("node %d: exists = %d, %v after Unlock", i, n, err)
		}
	}
}

// With three of five stopped, the attempt fails after the node timeout, naming the silent nodes.
func TestRealServersThreeStoppedNodes(t *testing.T) {
	ss, _, c := realCluster(t, redlock.WithNodeTimeout(50*time.Millisecond))
	for _, i := range []int{0, 2, 4} {
		ss[i].Pause(t)
	}
	_, err := c.TryLock(context.Background(), "k", 10*time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	var silent []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ne *redlock.NodeError
		if errors.As(e, &ne) {
			silent = append(silent, ne.Node)
			if ne.Addr != ss[ne.Node].Addr {
				t.Errorf("NodeError.Addr = %q, want %q", ne.Addr, ss[ne.Node].Addr)
			}
		}
	}
	slices.Sort(silent)
	if !slices.Equal(silent, []int{0, 2, 4}) {
		t.Fatalf("node errors for %v, want [0 2 4]; err: %v", silent, err)
	}
}

// A failed attempt whose SETs are still in flight on stopped nodes is rolled back there too,
// after the late reply: once the nodes resume, no key of the attempt stays anywhere.
func TestRealServersRollbackReachesLateNodes(t *testing.T) {
	ss, nodes, c := realCluster(t, redlock.WithNodeTimeout(50*time.Millisecond))
	ctx := context.Background()
	for _, i := range []int{0, 1} {
		if err := nodes[i].Set(ctx, "k", "someone-else", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ss[3].Pause(t)
	ss[4].Pause(t)
	if _, err := c.TryLock(ctx, "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	time.Sleep(20 * time.Millisecond) // let the SETs reach the stopped nodes' sockets
	ss[3].Resume()
	ss[4].Resume()
	c.Close() // waits for the late replies and their roll-back
	for i, want := range []string{"someone-else", "someone-else", "", "", ""} {
		got, err := nodes[i].Get(ctx, "k").Result()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		if err != nil || got != want {
			t.Fatalf("node %d holds %q (%v), want %q", i, got, err, want)
		}
	}
}

// A node that answers the acquisition long after Unlock's round ended is released all the
// same, once it answers: its key does not stay for the ttl.
func TestRealServersLateNodeReleasedAfterUnlockEnded(t *testing.T) {
	// Not parallel: its timing is for a machine running one test at a time.
	const ttl = time.Second
	ss, nodes, c := realCluster(t, redlock.WithNodeTimeout(50*time.Millisecond))
	ctx := context.Background()
	ss[4].Pause(t)
	l, err := c.Lock(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	elapse(ttl + 300*time.Millisecond) // past the round's own time (the ttl)
	ss[4].Resume()
	// The SET runs now and sets the key for a whole ttl; the release must follow it at once.
	var n int64
	if !eventually(ttl/2, func() bool { n, err = nodes[4].Exists(ctx, "k").Result(); return err == nil && n == 0 }) {
		t.Fatalf("node 4 still holds the key %v after it answered (%d, %v)", ttl/2, n, err)
	}
}

// A cancelled acquisition leaves nothing behind, and says both why and that it failed.
func TestRealServersCancelledAttemptLeavesNoKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var answered atomic.Int32
	ss, nodes, c := realCluster(t, redlock.WithNodeTimeout(time.Hour), redlock.WithObserver(locktrace.Observer{
		NodeReply: func(_ context.Context, r locktrace.NodeReply) {
			if r.Op == locktrace.NodeAcquire && answered.Add(1) == 2 {
				cancel() // the running nodes answered; the calls to the stopped ones are in flight
			}
		},
	}))
	for _, s := range ss[2:] {
		s.Pause(t)
	}
	_, err := c.TryLock(ctx, "k", time.Minute)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrNotAcquired and context.Canceled", err)
	}
	for _, s := range ss[2:] {
		s.Resume()
	}
	c.Close()
	for i, n := range nodes {
		if got, err := n.Exists(context.Background(), "k").Result(); err != nil || got != 0 {
			t.Fatalf("node %d: exists = %d, %v", i, got, err)
		}
	}
}

// A lock left to expire is taken by another client; the first one's Unlock and Extend fail
// with ErrNotHeld and leave the new holder's key alone.
func TestRealServersExpiredLockTakenOver(t *testing.T) {
	_, nodes, c := realCluster(t)
	other, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	first, err := c.TryLock(ctx, "k", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("taken while held: %v", err)
	}
	elapse(150 * time.Millisecond) // past the first lock's ttl
	second, err := other.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes { // the nodes after the quorum may still be answering
		redistest.Eventually(t, fmt.Sprintf("node %d holds the new token", i), func() bool {
			return n.Get(ctx, "k").Val() == second.Token()
		})
	}
	if err := first.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend of the expired lock: %v, want ErrNotHeld", err)
	}
	if err := first.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock of the expired lock: %v, want ErrNotHeld", err)
	}
	for i, n := range nodes {
		if got, err := n.Get(ctx, "k").Result(); err != nil || got != second.Token() {
			t.Fatalf("node %d holds %q (%v), want the new holder's token", i, got, err)
		}
		if ttl, err := n.PTTL(ctx, "k").Result(); err != nil || ttl < 50*time.Second {
			t.Fatalf("node %d: the new holder's ttl was changed to %v (%v)", i, ttl, err)
		}
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// EVALSHA falls back to EVAL when a node has lost its scripts (restart, SCRIPT FLUSH).
func TestRealServersScriptFlush(t *testing.T) {
	_, nodes, c := realCluster(t)
	ctx := context.Background()
	for i := range 2 {
		l, err := c.TryLock(ctx, "k"+strconv.Itoa(i), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			n.ScriptFlush(ctx)
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
