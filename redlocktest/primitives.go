package redlocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// Each primitive of one Client, with another Client as another process; waiting calls are
// woken by the announcements of releases alone (the retry timer is an hour).
func primitives(t *testing.T, s suite) {
	hour := redlock.WithRetryDelay(time.Hour, time.Hour)
	c1, c2 := s.client(t, s.shared, hour), s.client(t, s.shared, hour)
	for _, p := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, c1, c2 *redlock.Client)
	}{
		{"semaphore", semaphore},
		{"rwmutex", rwmutex},
		{"lockall", lockAll},
		{"resume", resume},
		{"do", do},
	} {
		t.Run(p.name, func(t *testing.T) { p.run(t, deadline(t), c1, c2) })
	}
	if s.cluster {
		t.Run("lockall-across-slots", func(t *testing.T) { lockAllAcrossSlots(t, deadline(t), c1) })
	}
}

// Two permits: a third holder is refused, and waits until a holder releases.
func semaphore(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	sem1, _ := c1.Semaphore("semaphore", 2)
	sem2, _ := c2.Semaphore("semaphore", 2)
	a, err := sem1.TryLock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sem2.TryLock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem2.TryLock(ctx, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a third holder of 2 permits: %v", err)
	}
	got := waited(ctx, func(ctx context.Context) (*redlock.Lock, error) { return sem2.Lock(ctx, ttl) })
	settle()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the semaphore's waiter: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Readers share; a waiting writer holds new readers back and gets the lock when they leave.
func rwmutex(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	rw1, _ := c1.RWMutex("rwmutex")
	rw2, _ := c2.RWMutex("rwmutex")
	r1, err := rw1.RLock(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw2.TryRLock(ctx, ttl)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	got := waited(ctx, func(ctx context.Context) (*redlock.Lock, error) { return rw2.Lock(ctx, ttl) })
	settle()
	if _, err := rw1.TryRLock(ctx, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a reader behind a waiting writer: %v", err)
	}
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiting writer: %v", err)
	}
}

// LockAll waits behind a Lock of one of its keys, and excludes it once held.
func lockAll(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	keys := []string{"{order}:stock", "{order}:invoice"}
	held, err := c1.Lock(ctx, keys[1], ttl)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *redlock.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := c2.LockAll(ctx, keys, ttl)
		got <- result{l, err}
	}()
	settle()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("LockAll behind Lock: %v", r.err)
	}
	all := r.l
	if _, err := c1.TryLock(ctx, keys[0], ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a key LockAll holds: %v", err)
	}
	if err := all.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// LockAll of keys in two hash slots is an error on cluster nodes, where a script touches one
// slot; it leaves nothing behind.
func lockAllAcrossSlots(t *testing.T, ctx context.Context, c *redlock.Client) {
	keys := []string{"stock", "invoice"}
	if l, err := c.TryLockAll(ctx, keys, ttl); err == nil {
		l.Unlock(ctx)
		t.Fatal("LockAll of keys in two slots on cluster nodes succeeded")
	}
	l, err := c.TryLock(ctx, keys[0], ttl) // nothing was left on the nodes
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Another Client takes a lock over with its token, extends and releases it; then the token is
// no good.
func resume(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	l, err := c1.Lock(ctx, "resume", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c2.Resume(ctx, "resume", l.Token(), 2*ttl)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := r.Extend(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Resume(ctx, "resume", l.Token(), ttl); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Resume after Unlock: %v, want ErrNotHeld", err)
	}
}

// Do holds the key while fn runs, extending it, and releases it when fn returns.
func do(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	err := c1.Do(ctx, "do", 300*time.Millisecond, func(ctx context.Context) error {
		time.Sleep(500 * time.Millisecond) // past the first ttl: Do extended it
		if ctx.Err() != nil {
			return errors.New("fn's context ended while Do held the lock")
		}
		if _, err := c2.TryLock(ctx, "do", ttl); !errors.Is(err, redlock.ErrNotAcquired) {
			return errors.New("another Client took the key while Do held it")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c2.TryLock(ctx, "do", ttl)
	if err != nil {
		t.Fatalf("TryLock after Do returned: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
