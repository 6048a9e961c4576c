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
	"github.com/quorumlock/redlock/redlock/locktrace"
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
	t.Parallel()
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

// A waiter whose attempt split the vote, and which a release wakes before that attempt's own
// roll-back has landed, does not take its own leftover for another holder: its next attempt
// waits for the roll-back. Three nodes, a semaphore of 2 permits (a holder needs all 3): the
// holder a's release reaches node 0 first, the waiter's attempt then wins node 0 only, and its
// roll-back there is slow; a's release on nodes 1 and 2 wakes the waiter. With a retry delay
// of an hour, a waiter refused by its own leftover would sleep for it.
func TestWaiterWokenBeforeItsRollbackLanded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	gatedClient := func(opts ...redlock.Option) (*redlock.Client, []*gated) {
		gates := make([]*gated, 3)
		nodes := make([]driver.Node, 3)
		for i, cl := range redistest.Clients(t, addrs...) {
			gates[i] = &gated{Node: goredisnode.New(cl)}
			nodes[i] = gates[i]
		}
		c, err := redlock.NewNodes(nodes, append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, gates
	}
	c1, g1 := gatedClient()
	acquired := make(chan int, 16) // c2's acquisition replies that said yes, by node
	refused := make(chan int, 16)  // and that said no
	c2, g2 := gatedClient(redlock.WithRetryDelay(time.Hour, time.Hour), redlock.WithObserver(locktrace.Observer{
		NodeReply: func(_ context.Context, r locktrace.NodeReply) {
			switch {
			case r.Op != locktrace.NodeAcquire:
			case r.Outcome == locktrace.NodeOK:
				acquired <- r.Node
			case r.Outcome == locktrace.NodeTaken:
				refused <- r.Node
			}
		},
	}))
	sem1, sem2 := semaphore(t, c1, "exports", 2), semaphore(t, c2, "exports", 2)
	a, err := sem1.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sem2.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Unlock(ctx)
	for range 3 {
		redistest.Receive(t, "b's permits", acquired)
	}
	got := make(chan error, 1)
	go func() {
		l, err := sem2.Lock(ctx, time.Minute)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	// Its first attempt, and its attempt as a waiter, refused by every node: it pauses for an hour.
	for range 6 {
		redistest.Receive(t, "the waiter's refusals", refused)
	}
	open := make(chan struct{})
	g1[1].then(until(open)) // a's release reaches node 0 first
	g1[2].then(until(open))
	g2[0].then(pass, after(500*time.Millisecond)) // the waiter's attempt wins node 0; its roll-back is slow
	unlocked := make(chan error, 1)
	go func() { unlocked <- a.Unlock(ctx) }()
	if n := redistest.Receive(t, "the waiter's attempt winning node 0", acquired); n != 0 {
		t.Fatalf("the waiter's attempt won node %d, want node 0", n)
	}
	close(open) // a's release reaches nodes 1 and 2, and wakes the waiter
	if err := redistest.Receive(t, "a's Unlock", unlocked); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the waiter, woken before its roll-back landed", got); err != nil {
		t.Fatal(err)
	}
}
