package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A semaphore of 2 permits admits two holders and refuses a third until one leaves; its
// quorum is floor(P*N/(P+1)) + 1.
func TestSemaphoreAdmitsPermits(t *testing.T) {
	ms, c := cluster(t, 5)
	ctx := context.Background()
	sem, err := c.Semaphore("pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	if q := sem.Quorum(); q != 4 {
		t.Fatalf("Quorum = %d, want 4", q)
	}
	a, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem.TryLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("third TryLock: %v, want ErrNotAcquired", err)
	}
	if a.Fence() != 0 || a.Key() != "pool" || len(a.Keys()) != 1 || a.Token() == b.Token() {
		t.Fatalf("Lock: fence %d, key %q, keys %q", a.Fence(), a.Key(), a.Keys())
	}
	redistest.Eventually(t, "every node keeps semaphore:{pool}", func() bool {
		for _, m := range ms {
			if !m.Exists("semaphore:{pool}") {
				return false
			}
		}
		return true
	})
	if err := a.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	if err := a.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend after Unlock: %v, want ErrNotHeld", err)
	}
	c2, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	c2.Unlock(ctx)
	b.Unlock(ctx)

	// A holder of 3 nodes out of 5 is not enough: 2 are down, so nobody gets in.
	ms[0].Close()
	ms[1].Close()
	if _, err := sem.TryLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("with 3 of 5 nodes: %v, want ErrNotAcquired", err)
	}
}
