package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// masters starts n in-memory Redis servers standing in for independent masters, so that the
// examples run anywhere; with real servers, pass clients for their addresses instead.
func masters(n int) (nodes []redis.UniversalClient, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			panic(err)
		}
		servers = append(servers, m)
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: m.Addr()}))
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
	locker, _ := redlock.New(nodes)
	defer locker.Close()
	ctx := context.Background()

	first, _ := locker.TryLock(ctx, "report", 10*time.Second)
	_, err := locker.TryLock(ctx, "report", 10*time.Second)
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
	locker, _ := redlock.New(nodes)
	defer locker.Close()

	held, _ := locker.TryLock(context.Background(), "nightly-job", time.Minute)
	defer held.Unlock(context.Background())

	// Lock retries until the context ends; the error says both what and why.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := locker.Lock(ctx, "nightly-job", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

func ExampleLock_Extend() {
	nodes, stop := masters(3)
	defer stop()
	locker, _ := redlock.New(nodes)
	defer locker.Close()
	ctx := context.Background()

	lock, _ := locker.Lock(ctx, "import", 2*time.Second)
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
	locker, _ := redlock.New(nodes)
	defer locker.Close()
	ctx := context.Background()

	lock, _ := locker.Lock(ctx, "cache-rebuild", 10*time.Second)
	fmt.Println(lock.Unlock(ctx))
	// A lock is released once; a second Unlock never touches a later owner's key.
	fmt.Println(errors.Is(lock.Unlock(ctx), redlock.ErrNotHeld))
	// Output:
	// <nil>
	// true
}
