package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A node whose process is gone refuses connections, and a go-redis client made with its
// defaults dials it again until the deadline. Once the Client has seen a refusal, the node's
// calls fail at once: an attempt that needs its answer is decided in a round trip of the
// others, not a node timeout. When the node is back, it is used again.
func TestRealServersKilledNodeFailsFast(t *testing.T) {
	t.Parallel()
	const nodeTimeout = time.Second
	ss := redistest.StartN(t, 3)
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(nodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	other, err := redlock.New(redistest.Clients(t, ss[0].Addr), redlock.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.TryLock(ctx, "k", time.Minute); err != nil { // node 0 says no to c
		t.Fatal(err)
	}
	ss[2].Kill()
	// Node 1 says yes, node 0 no: node 2 decides, and refuses.
	try := func() time.Duration {
		start := time.Now()
		if _, err := c.TryLock(ctx, "k", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
		}
		return time.Since(start)
	}
	first := try()
	for i := range 5 {
		if d := try(); d > nodeTimeout/2 {
			t.Fatalf("attempt %d after the refusal took %v (the first %v): the killed node is waited for", i+2, d, first)
		}
	}
	ss[2].Restart(t)
	redistest.Eventually(t, "the restarted node votes again", func() bool {
		l, err := c.TryLock(ctx, "k", time.Minute)
		if err == nil {
			l.Unlock(ctx)
		}
		return err == nil
	})
}
