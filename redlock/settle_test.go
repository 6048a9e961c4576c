package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// A gated node runs each of its next Eval calls as its plan says: at once, held until a gate
// opens, or after a delay. Calls beyond the plan run at once.
type gated struct {
	driver.Node
	mu   sync.Mutex
	plan []func(ctx context.Context)
}

// then adds steps to the plan.
func (g *gated) then(steps ...func(ctx context.Context)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.plan = append(g.plan, steps...)
}

func (g *gated) Eval(ctx context.Context, s driver.Script, keys, args []string) (any, error) {
	g.mu.Lock()
	var step func(context.Context)
	if len(g.plan) > 0 {
		step, g.plan = g.plan[0], g.plan[1:]
	}
	g.mu.Unlock()
	if step != nil {
		step(ctx)
	}
	return g.Node.Eval(ctx, s, keys, args)
}

// pass runs a call at once; until holds it until open closes (or its context ends); after
// holds it for d.
func pass(context.Context) {}

func until(open <-chan struct{}) func(context.Context) {
	return func(ctx context.Context) {
		select {
		case <-open:
		case <-ctx.Done():
		}
	}
}

func after(d time.Duration) func(context.Context) {
	return func(context.Context) { time.Sleep(d) }
}

// A TryLock right after Unlock returned takes the permit that Unlock freed, even when a refused
// attempt before them had set its own permit on the nodes where a holder's acquisition was
// still on its way. Five nodes, 2 permits (a holder needs 4): the first holder's acquisition
// is held back on node 4, the second's on node 3, so that a third, refused, attempt sets its
// permit on nodes 3 and 4; its roll-back there is slow. The first holder unlocks; the second's
// acquisition lands on node 3. A TryLock then needs 4 nodes with a free permit: with the
// refused attempt's permits still on nodes 3 and 4 it finds 3.
func TestTryLockAfterUnlockFindsThePermitFreed(t *testing.T) {
	ctx := context.Background()
	ss := redistest.StartN(t, 5)
	nodes := make([]driver.Node, 5)
	gates := make([]*gated, 5)
	for i, cl := range redistest.Clients(t, redistest.Addrs(ss)...) {
		gates[i] = &gated{Node: goredisnode.New(cl)}
		nodes[i] = gates[i]
	}
	c, err := redlock.NewNodes(nodes, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sem, err := c.Semaphore("exports", 2)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 10 * time.Second
	open4, open3 := make(chan struct{}), make(chan struct{})
	gates[4].then(until(open4))
	first, err := sem.TryLock(ctx, ttl)
	if err != nil {
		t.Fatalf("first holder: %v", err)
	}
	gates[3].then(until(open3))
	second, err := sem.TryLock(ctx, ttl)
	if err != nil {
		t.Fatalf("second holder: %v", err)
	}
	// The third attempt's permit lands at once on nodes 3 and 4; its roll-back there waits.
	gates[3].then(pass, after(300*time.Millisecond))
	gates[4].then(pass, after(300*time.Millisecond))
	if _, err := sem.TryLock(ctx, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a third holder: %v, want ErrNotAcquired", err)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("first.Unlock: %v", err)
	}
	close(open3) // the second holder's acquisition lands on node 3
	close(open4)
	node3 := redistest.Client(t, ss[3].Addr)
	redistest.Eventually(t, "the second holder's permit on node 3", func() bool {
		keys, _ := node3.Keys(ctx, "*").Result()
		for _, k := range keys {
			if _, err := node3.ZScore(ctx, k, second.Token()).Result(); err == nil {
				return true
			}
		}
		return false
	})
	third, err := sem.TryLock(ctx, ttl)
	if err != nil {
		t.Fatalf("TryLock right after Unlock returned, one holder left of 2 permits: %v", err)
	}
	for _, l := range []*redlock.Lock{second, third} {
		if err := l.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
}
