package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// masters starts n in-memory Redis servers standing in for independent masters, so that the
// examples run anywhere; with real servers, pass clients for their addresses instead. Their
// keys expire with the wall clock, as on a real server.
func masters(n int) (nodes []redis.UniversalClient, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			panic(err)
		}
		m.ClockTTL(true)
		servers = append(servers, m)
		node := redis.NewClient(&redis.Options{Addr: m.Addr()})
		node.Ping(context.Background()) // a connection ready, so that the first lock does not dial
		nodes = append(nodes, node)
	}
	return nodes, func() {
		for i := range nodes {
			nodes[i].Close()
			servers[i].Close()
		}
	}
}

func Example() {
	nodes, stop := masters(5)
	defer stop()

	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	ctx := context.Background()
	lock, err := locker.Lock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Unlock(ctx)

	// The critical section: safe to act until lock.Until(), or longer after an Extend.
	fmt.Println("holding", lock.Key(), "for less than", time.Until(lock.Until()).Round(time.Second))
	// Output: holding orders:42 for less than 10s
}

func ExampleClient_TryLock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	first, err := locker.Lock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locker.TryLock(ctx, "report", 10*time.Second)
	fmt.Println("second attempt:", errors.Is(err, redlock.ErrNotAcquired))

	// The error wraps a *NodeError for each node that did not say yes.
	var nodeErr *redlock.NodeError
	if errors.As(err, &nodeErr) {
		fmt.Println("a node said:", nodeErr.Err)
	}
	first.Unlock(ctx)
	// Output:
	// second attempt: true
	// a node said: held by another owner
}

func ExampleClient_Lock_timeout() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	held, err := locker.TryLock(context.Background(), "nightly-job", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer held.Unlock(context.Background())

	// Lock retries until the context ends; the error says both what and why.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = locker.Lock(ctx, "nightly-job", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

func ExampleLock_Extend() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "import", 2*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	before := lock.Until()
	if err := lock.Extend(ctx, 30*time.Second); err != nil {
		fmt.Println("lost the lock:", errors.Is(err, redlock.ErrNotHeld))
		return
	}
	fmt.Println("extended by about", lock.Until().Sub(before).Round(time.Second))
	lock.Unlock(ctx)
	// Output: extended by about 28s
}

func ExampleLock_Unlock() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "cache-rebuild", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lock.Unlock(ctx))
	// A lock is released once; a second Unlock never touches a later owner's key.
	fmt.Println(errors.Is(lock.Unlock(ctx), redlock.ErrNotHeld))
	// Output:
	// <nil>
	// true
}

func ExampleClient_Do() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	// The lock is extended while fn runs and released when it returns. If it cannot be kept,
	// ctx is cancelled with cause ErrNotHeld and Do's error wraps ErrNotHeld.
	err = locker.Do(context.Background(), "nightly-report", 2*time.Second, func(ctx context.Context) error {
		fmt.Println("building the report")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// building the report
	// done: <nil>
}

func ExampleLock_Lost() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	lock, err := locker.Lock(context.Background(), "k", 100*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-lock.Lost():
		fmt.Println("lost: the validity passed without an Extend")
	case <-time.After(5 * time.Second):
		fmt.Println("still held")
	}
	// Output: lost: the validity passed without an Extend
}

// fencedStore is a resource that checks fencing tokens: it refuses a write whose token is lower
// than the highest it has accepted.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

func (s *fencedStore) Write(token uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("stale fencing token %d: %d was seen", token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}

func ExampleWithFencing() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithFencing())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()
	store := &fencedStore{}

	// Client A takes the lock, then stalls (a GC pause, a stopped VM) past its validity.
	a, err := locker.Lock(ctx, "stock", 50*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	<-a.Lost()

	// Meanwhile client B acquires the lock and writes with its larger token.
	b, err := locker.Lock(ctx, "stock", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("B writes:", store.Write(b.Fence(), "from B"))

	// A wakes up, unaware, and writes: the store refuses it.
	err = store.Write(a.Fence(), "from A")
	fmt.Println("A writes: refused =", err != nil)
	fmt.Println("store holds:", store.value)
	b.Unlock(ctx)
	// Output:
	// B writes: <nil>
	// A writes: refused = true
	// store holds: from B
}

func ExampleClient_Semaphore() {
	nodes, stop := masters(5)
	defer stop()
	// A holder needs 4 of the 5 nodes here: a generous node timeout keeps a first call on a
	// cold connection (under -race, on a busy machine) from costing one of them.
	locker, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	// At most 2 holders at once, however the nodes are split between contenders: each holder
	// needs 4 of the 5 nodes, not a majority.
	exports, err := locker.Semaphore("exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("nodes a holder needs:", exports.Quorum())
	first, err := exports.TryLock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	second, err := exports.TryLock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = exports.TryLock(ctx, 10*time.Second)
	fmt.Println("a third holder:", errors.Is(err, redlock.ErrNotAcquired))

	first.Unlock(ctx)
	third, err := exports.TryLock(ctx, 10*time.Second)
	fmt.Println("after a release:", err)
	second.Unlock(ctx)
	third.Unlock(ctx)
	// Output:
	// nodes a holder needs: 4
	// a third holder: true
	// after a release: <nil>
}

func ExampleClient_RWMutex() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	doc, err := locker.RWMutex("doc:7")
	if err != nil {
		fmt.Println(err)
		return
	}
	r1, err := doc.RLock(ctx, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	r2, err := doc.TryRLock(ctx, 10*time.Second)
	fmt.Println("readers share:", err)
	_, err = doc.TryLock(ctx, 10*time.Second)
	fmt.Println("a writer waits for them:", errors.Is(err, redlock.ErrNotAcquired))
	r1.Unlock(ctx)
	r2.Unlock(ctx)

	err = doc.Do(ctx, 10*time.Second, func(ctx context.Context) error {
		fmt.Println("writing alone")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// readers share: <nil>
	// a writer waits for them: true
	// writing alone
	// done: <nil>
}

func ExampleClient_LockAll() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	// A transfer locks both accounts, or neither: no deadlock whatever the order.
	both, err := locker.LockAll(ctx, []string{"account:alice", "account:bob"}, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", both.Keys())

	// Each key is stored as Lock stores it, so a plain Lock of one of them waits.
	_, err = locker.TryLock(ctx, "account:bob", 10*time.Second)
	fmt.Println("Lock of account:bob:", errors.Is(err, redlock.ErrNotAcquired))
	both.Unlock(ctx)
	// Output:
	// holding [account:alice account:bob]
	// Lock of account:bob: true
}

func ExampleClient_Resume() {
	nodes, stop := masters(3)
	defer stop()
	ctx := context.Background()

	// One process takes the lock and hands its token on (to a child, or across a restart).
	parent, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer parent.Close()
	lock, err := parent.Lock(ctx, "migration", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	token := lock.Token()

	// Another process, with its own Client, takes it over: it extends and unlocks it.
	child, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer child.Close()
	taken, err := child.Resume(ctx, "migration", token, 30*time.Second)
	fmt.Println("resumed:", err)
	fmt.Println("unlocked:", taken.Unlock(ctx))

	_, err = child.Resume(ctx, "migration", token, 30*time.Second)
	fmt.Println("again:", errors.Is(err, redlock.ErrNotHeld))
	// Output:
	// resumed: <nil>
	// unlocked: <nil>
	// again: true
}

// goredisnode.New makes a go-redis client a node, so that it mixes in NewNodes with nodes of
// other clients: here a node written against the contract (package driver), as
// redlockrueidis.Node and redlockvalkey.Node are. New is NewNodes over goredisnode.New of each
// client.
func ExampleNewNodes_mixed() {
	servers, stop := masters(3)
	defer stop()
	other := redis.NewClient(&redis.Options{Addr: servers[2].(*redis.Client).Options().Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer other.Close()

	locker, err := redlock.NewNodes([]driver.Node{
		goredisnode.New(servers[0]),
		goredisnode.New(servers[1]),
		goredisNode{other},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()
	lock, err := locker.Lock(ctx, "report", 10*time.Second)
	fmt.Println("acquired:", err)
	fmt.Println("released:", lock.Unlock(ctx))

	_, err = redlock.NewNodes([]driver.Node{goredisnode.New(servers[0]), goredisnode.New(servers[0])})
	fmt.Println("one server given twice:", err != nil)
	// Output:
	// acquired: <nil>
	// released: <nil>
	// one server given twice: true
}
