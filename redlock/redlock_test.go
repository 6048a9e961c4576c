package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// cluster starts n miniredis nodes and a Client over them; t.Cleanup closes the Client first.
// The node timeout is generous (a loaded CI machine running -race must not fail a test by
// missing it) unless opts set another.
func cluster(t *testing.T, n int, opts ...redlock.Option) ([]*miniredis.Miniredis, *redlock.Client) {
	t.Helper()
	ms := redistest.Minis(t, n)
	opts = append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}, opts...)
	c, err := redlock.New(redistest.MiniClients(t, ms), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ms, c
}

// work stands for a holder's work of about d under its lock, or a contender's pause between
// two tries: time that passes, guessing nothing of another goroutine's state.
func work(d time.Duration) { time.Sleep(d) }

// elapse lets d of real time pass: for a ttl to expire, a validity to end, a clock to move
// on, a keeper to renew. The tests that must not guess another goroutine's state wait on the
// Observer (watchWaits) or on a bounded receive instead.
func elapse(d time.Duration) { time.Sleep(d) }

// eventually polls cond every few milliseconds until it holds or d has passed, and reports whether
// it held: for state that no event announces (goroutines gone, a key gone from a node).
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); elapse(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// deadline is a context that fails a test that hangs in seconds, not at the package timeout.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// companion names the key of kind beside the lock of key, as a Client without a prefix does.
func companion(kind, key string) string {
	names, err := wire.NewNames("")
	if err != nil {
		panic(err) // "" is a valid prefix
	}
	return names.Companion(kind, key)
}

func commands(ms []*miniredis.Miniredis) int {
	n := 0
	for _, m := range ms {
		n += m.CommandCount()
	}
	return n
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	ms := redistest.Minis(t, 2)
	a, b := redistest.Client(t, ms[0].Addr()), redistest.Client(t, ms[1].Addr())
	var typedNil *redis.Client
	for _, tc := range []struct {
		name  string
		nodes []redis.UniversalClient
		opts  []redlock.Option
	}{
		{"no nodes", nil, nil},
		{"nil node", []redis.UniversalClient{a, nil}, nil},
		{"typed nil node", []redis.UniversalClient{a, typedNil}, nil},
		{"same client twice", []redis.UniversalClient{a, b, a}, nil},
		{"nil option", []redis.UniversalClient{a}, []redlock.Option{nil}},
		{"negative drift", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(-0.1)}},
		{"drift 0.5", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(0.5)}},
		{"drift NaN", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(math.NaN())}},
		{"zero node timeout", []redis.UniversalClient{a}, []redlock.Option{redlock.WithNodeTimeout(0)}},
		{"retry min > max", []redis.UniversalClient{a}, []redlock.Option{redlock.WithRetryDelay(time.Second, time.Millisecond)}},
		{"retry max 0", []redis.UniversalClient{a}, []redlock.Option{redlock.WithRetryDelay(0, 0)}},
		{"negative retry", []redis.UniversalClient{a}, []redlock.Option{redlock.WithRetryDelay(-1, time.Second)}},
		{"nil clock", []redis.UniversalClient{a}, []redlock.Option{redlock.WithClock(nil)}},
		{"nil logger", []redis.UniversalClient{a}, []redlock.Option{redlock.WithLogger(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(tc.nodes, tc.opts...)
			if err == nil || c != nil {
				t.Fatalf("New = %v, %v; want an error", c, err)
			}
		})
	}
	if n := commands(ms); n != 0 {
		t.Fatalf("New sent %d commands", n)
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		key  string
		ttl  time.Duration
	}{
		{"empty key", "", time.Second},
		{"zero ttl", "k", 0},
		{"negative ttl", "k", -time.Second},
		{"ttl within drift", "k", 2 * time.Millisecond},
		{"sub-millisecond ttl", "k", 1500 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Lock(ctx, tc.key, tc.ttl); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("Lock: %v, want an input error", err)
			}
			if _, err := c.TryLock(ctx, tc.key, tc.ttl); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("TryLock: %v, want an input error", err)
			}
		})
	}
	l, err := c.TryLock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// TryLock returned at a quorum: let the last node's SET land before counting.
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists("k") })
	}
	before := commands(ms)
	if err := l.Extend(ctx, 0); err == nil {
		t.Error("Extend(0) succeeded")
	}
	if n := commands(ms) - before; n != 0 {
		t.Fatalf("bad input sent %d commands", n)
	}
}

func TestStoredKeyValueAndTTL(t *testing.T) {
	for _, prefix := range []string{"", "svc:"} {
		ms, c := cluster(t, 3, redlock.WithKeyPrefix(prefix))
		l, err := c.TryLock(context.Background(), "orders:42", 1500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms { // the nodes after the quorum may still be answering
			redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists(prefix + "orders:42") })
		}
		if l.Key() != "orders:42" {
			t.Errorf("Key() = %q", l.Key())
		}
		if len(l.Token()) < 22 {
			t.Errorf("Token() = %q, want 128 bits encoded", l.Token())
		}
		for i, m := range ms {
			if got, _ := m.Get(prefix + "orders:42"); got != l.Token() {
				t.Errorf("prefix %q node %d: %q = %q, want %q", prefix, i, prefix+"orders:42", got, l.Token())
			}
			if ttl := m.TTL(prefix + "orders:42"); ttl != 1500*time.Millisecond {
				t.Errorf("node %d ttl = %v", i, ttl)
			}
		}
	}
}

func TestTokensAreUnique(t *testing.T) {
	t.Parallel()
	_, c := cluster(t, 3)
	seen := map[string]bool{}
	for range 200 {
		// Lock, not TryLock: an Unlock returns at a quorum, and the last node's release may
		// still be on its way when the next attempt arrives.
		l, err := c.Lock(context.Background(), "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if seen[l.Token()] {
			t.Fatalf("token %q repeated", l.Token())
		}
		seen[l.Token()] = true
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnlock(t *testing.T) {
	ms, c := cluster(t, 5)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Every SET has landed (an absent key could be one still in flight), so that once released
	// the nodes stay free for the second owner.
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d holds the first token", i), func() bool {
			got, _ := m.Get("k")
			return got == l.Token()
		})
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d released", i), func() bool { return !m.Exists("k") })
	}
	// A second owner takes it; the first one's second Unlock must not touch it.
	l2, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d holds the second token", i), func() bool {
			got, _ := m.Get("k")
			return got == l2.Token()
		})
	}
	// Unlock still releases when the caller's context is already cancelled.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := l2.Unlock(cancelled); err != nil {
		t.Fatalf("Unlock with a cancelled context: %v", err)
	}
}

// A quick Unlock comes while the SETs to two slow nodes are still in flight: it returns on the
// three that answered, and each slow node is released once its SET has landed, exactly once.
func TestUnlockReleasesNodesWhoseSetCameLate(t *testing.T) {
	release := wire.ReleaseScript.SHA1()
	ms, c := cluster(t, 5)
	gate := make(chan struct{})
	var releases [5]atomic.Int32
	for i, m := range ms {
		m.Server().SetPreHook(func(p *server.Peer, cmd string, args ...string) bool {
			switch {
			case cmd == "SET" && i >= 3:
				<-gate
			case cmd == "EVALSHA" && args[0] == release:
				releases[i].Add(1)
			}
			return false
		})
	}
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		close(gate)
		t.Fatal(err)
	}
	err = l.Unlock(ctx)
	close(gate)
	if err != nil {
		t.Fatalf("Unlock = %v, want nil: three nodes answered", err)
	}
	c.Close() // waits for the late SETs and their releases
	for i, m := range ms {
		if m.Exists("k") {
			t.Errorf("node %d kept the key", i)
		}
		if n := releases[i].Load(); n != 1 {
			t.Errorf("node %d was released %d times", i, n)
		}
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	waiting, watch := watchWaits()
	_, c := cluster(t, 3, redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond), watch)
	ctx := context.Background()
	l, err := c.Lock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := c.Lock(ctx, "k", 10*time.Second)
		if err == nil {
			err = l2.Unlock(ctx)
		}
		got <- err
	}()
	waiting.await(t)
	select {
	case err := <-got:
		t.Fatalf("second Lock returned while the first held the lock: %v", err)
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the second Lock returns after the release", got); err != nil {
		t.Fatal(err)
	}
}

func TestLockStopsWithContext(t *testing.T) {
	ms, c := cluster(t, 3)
	for _, m := range ms {
		m.Set("k", "someone-else")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Lock(ctx, "k", 10*time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	var ne *redlock.NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("err = %v, want node details", err)
	}
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.TryLock(cancelled, "free", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryLock on a cancelled context: %v", err)
	}
	c.Close()
	for i, m := range ms {
		if m.Exists("free") {
			t.Fatalf("node %d kept a key of a cancelled attempt", i)
		}
	}
}

func TestCloseEndsWaitingLocks(t *testing.T) {
	waiting, watch := watchWaits()
	ms, c := cluster(t, 3, watch)
	for _, m := range ms {
		m.Set("k", "someone-else")
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(context.Background(), "k", 10*time.Second)
		got <- err
	}()
	waiting.await(t)
	c.Close()
	if err := redistest.Receive(t, "Lock returns after Close", got); !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock during Close: %v, want ErrClosed", err)
	}
	if _, err := c.TryLock(context.Background(), "x", time.Second); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("TryLock after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Many goroutines contend on one key and update a shared value that is not atomic: with the
// lock, no two critical sections overlap and no update is lost.
func TestMutualExclusion(t *testing.T) {
	t.Parallel()
	_, c := cluster(t, 5, redlock.WithRetryDelay(time.Millisecond, 3*time.Millisecond))
	const workers, rounds = 16, 30
	// About a second on 2 cores: a hand-over that no longer wakes the next waiter fails by the
	// deadline rather than crawling on the waiters' timers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var inside atomic.Int32
	var overlaps atomic.Int32
	counter := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				l, err := c.Lock(ctx, "counter", 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				v := counter
				work(10 * time.Microsecond)
				counter = v + 1
				inside.Add(-1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 || counter != workers*rounds {
		t.Fatalf("overlaps = %d, counter = %d; want 0, %d", overlaps.Load(), counter, workers*rounds)
	}
}

func FuzzLockInput(f *testing.F) {
	f.Add("k", int64(time.Second))
	f.Add("", int64(0))
	f.Add("\x00", int64(-1))
	f.Add("k", int64(math.MaxInt64))
	c, err := redlock.New(redistest.MiniClients(f, redistest.Minis(f, 3)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	f.Fuzz(func(t *testing.T, key string, ttl int64) {
		l, err := c.TryLock(context.Background(), key, time.Duration(ttl))
		if err != nil {
			return
		}
		if key == "" || ttl <= 0 {
			t.Fatalf("TryLock(%q, %d) accepted bad input", key, ttl)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
