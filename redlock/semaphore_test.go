package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

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
	onEveryNode(t, ms, "every node keeps the holders", func(m *miniredis.Miniredis) bool { return m.Exists(companion("semaphore", "pool")) })
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

// Semaphore.Do and RWMutex.RDo keep their lock extended while fn runs past the ttl, and release
// it when fn returns. The clocks move only when fn moves them (see TestDoExtendsWhileFnRuns):
// on the real clock, with a 1.5 s ttl extended when 500 ms were left, a loaded machine still
// lost the lock now and then. They run one after another, each fn waiting for its keeper's
// extensions.
func TestPrimitivesDoExtendWhileFnRuns(t *testing.T) {
	t.Parallel()
	const ttl = time.Minute
	clk, extended, _, c, ctx := manualCluster(t)
	sem := semaphore(t, c, "pool", 1)
	rw := rwMutex(t, c, "doc")
	for _, p := range []struct {
		name string
		do   func(context.Context, time.Duration, func(context.Context) error) error
	}{{"Semaphore.Do", sem.Do}, {"RWMutex.RDo", rw.RDo}, {"RWMutex.Do", rw.Do}} {
		err := p.do(ctx, ttl, func(ctx context.Context) error {
			for range 3 { // over two ttls
				if err := clk.awaitExtension(t, ttl, p.name+"'s keeper extends the lock", extended); err != nil {
					return fmt.Errorf("the keeper's extension: %w", err)
				}
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	// Released: a permit and the write lock are free at once.
	if l, err := sem.TryLock(ctx, time.Second); err != nil {
		t.Fatal(err)
	} else {
		l.Unlock(ctx)
	}
	if l, err := rw.TryLock(ctx, time.Second); err != nil {
		t.Fatal(err)
	} else {
		l.Unlock(ctx)
	}
}
