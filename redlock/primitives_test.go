package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// semaphore returns c.Semaphore(key, permits), failing t if it refuses them.
func semaphore(t testing.TB, c *redlock.Client, key string, permits int) *redlock.Semaphore {
	t.Helper()
	s, err := c.Semaphore(key, permits)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rwMutex returns c.RWMutex(key), failing t if it refuses the key.
func rwMutex(t testing.TB, c *redlock.Client, key string) *redlock.RWMutex {
	t.Helper()
	m, err := c.RWMutex(key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPrimitivesBadInputSendsNothing(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	if _, err := c.Semaphore("", 2); err == nil {
		t.Error("Semaphore with an empty key")
	}
	for _, p := range []int{0, -1} {
		if _, err := c.Semaphore("s", p); err == nil {
			t.Errorf("Semaphore of %d permits", p)
		}
	}
	if _, err := c.RWMutex(""); err == nil {
		t.Error("RWMutex with an empty key")
	}
	sem, err := c.Semaphore("s", 2)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) error { return nil }
	for _, ttl := range []time.Duration{0, -time.Second, 2 * time.Millisecond, 1500 * time.Microsecond} {
		for name, call := range map[string]func() error{
			"Semaphore.Lock":    func() error { _, err := sem.Lock(ctx, ttl); return err },
			"Semaphore.TryLock": func() error { _, err := sem.TryLock(ctx, ttl); return err },
			"Semaphore.Do":      func() error { return sem.Do(ctx, ttl, fn) },
			"RWMutex.Lock":      func() error { _, err := rw.Lock(ctx, ttl); return err },
			"RWMutex.TryLock":   func() error { _, err := rw.TryLock(ctx, ttl); return err },
			"RWMutex.RLock":     func() error { _, err := rw.RLock(ctx, ttl); return err },
			"RWMutex.TryRLock":  func() error { _, err := rw.TryRLock(ctx, ttl); return err },
			"RWMutex.Do":        func() error { return rw.Do(ctx, ttl, fn) },
			"RWMutex.RDo":       func() error { return rw.RDo(ctx, ttl, fn) },
			"LockAll":           func() error { _, err := c.LockAll(ctx, []string{"a"}, ttl); return err },
			"TryLockAll":        func() error { _, err := c.TryLockAll(ctx, []string{"a"}, ttl); return err },
			"Resume":            func() error { _, err := c.Resume(ctx, "a", "token", ttl); return err },
		} {
			if err := call(); err == nil || errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("%s(ttl %v): %v, want an input error", name, ttl, err)
			}
		}
	}
	for _, keys := range [][]string{nil, {}, {"a", ""}, {"a", "b", "a"}} {
		if _, err := c.LockAll(ctx, keys, time.Second); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("LockAll(%q): %v, want an input error", keys, err)
		}
		if _, err := c.TryLockAll(ctx, keys, time.Second); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryLockAll(%q): %v, want an input error", keys, err)
		}
	}
	for _, kt := range [][2]string{{"", "token"}, {"k", ""}} {
		if _, err := c.Resume(ctx, kt[0], kt[1], time.Second); err == nil || errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Resume(%q, %q): %v, want an input error", kt[0], kt[1], err)
		}
	}
	if err := sem.Do(ctx, time.Second, nil); err == nil {
		t.Error("Semaphore.Do with a nil fn")
	}
	if n := commands(ms); n != 0 {
		t.Fatalf("bad input sent %d commands", n)
	}
}

// Every waiting acquisition is woken by the release it waits for, not by its retry timer
// (an hour here).
func TestWaitingPrimitivesWokenByRelease(t *testing.T) {
	waiting, watch := watchWaits()
	_, c := cluster(t, 3, redlock.WithRetryDelay(time.Hour, time.Hour), watch)
	ctx := context.Background()
	sem := semaphore(t, c, "pool", 1)
	rw := rwMutex(t, c, "doc")
	lockAll := func(keys ...string) func(context.Context, time.Duration) (*redlock.Lock, error) {
		return func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) { return c.LockAll(ctx, keys, ttl) }
	}
	lock := func(key string) func(context.Context, time.Duration) (*redlock.Lock, error) {
		return func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) { return c.Lock(ctx, key, ttl) }
	}
	type acquire = func(context.Context, time.Duration) (*redlock.Lock, error)
	for _, tc := range []struct {
		name          string
		holder, waits acquire
	}{
		{"Semaphore.Lock behind a holder", sem.Lock, sem.Lock},
		{"RWMutex.Lock behind a reader", rw.RLock, rw.Lock},
		{"RWMutex.RLock behind a writer", rw.Lock, rw.RLock},
		{"RWMutex.Lock behind a writer", rw.Lock, rw.Lock},
		{"LockAll behind Lock", lock("b"), lockAll("a", "b")},
		{"LockAll behind LockAll", lockAll("b", "c"), lockAll("a", "b")},
		{"Lock behind LockAll", lockAll("a", "b"), lock("b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, err := tc.holder(ctx, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			waiting.reset() // the holder's call may have waited in line too, briefly
			got := make(chan error, 1)
			go func() {
				l, err := tc.waits(ctx, 10*time.Second)
				if err == nil {
					err = l.Unlock(ctx)
				}
				got <- err
			}()
			waiting.await(t)
			held.Unlock(ctx)
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter was not woken by the release")
			}
		})
	}
}

// One key name used by every primitive at once: no WRONGTYPE. Lock and LockAll exclude each
// other; the semaphore and the RWMutex keep keys of their own, independent of the others.
func TestPrimitivesShareAKeyName(t *testing.T) {
	_, c := cluster(t, 3)
	ctx := context.Background()
	sem := semaphore(t, c, "k", 1)
	rw := rwMutex(t, c, "k")
	s, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rw.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLockAll(ctx, []string{"j", "k"}, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) || strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("LockAll beside Lock: %v", err)
	}
	for _, l := range []*redlock.Lock{s, w, l} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.TryLockAll(ctx, []string{"j", "k"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "k", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock beside LockAll: %v", err)
	}
	r, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err = sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*redlock.Lock{all, r, s} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// onEveryNode waits until cond holds on every node: state that a call leaves to the nodes that
// answer after its quorum decided.
func onEveryNode(t *testing.T, ms []*miniredis.Miniredis, what string, cond func(m *miniredis.Miniredis) bool) {
	t.Helper()
	redistest.Eventually(t, what, func() bool {
		for _, m := range ms {
			if !cond(m) {
				return false
			}
		}
		return true
	})
}
