package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// A release hands the key to the first live waiter in line on each node: the key holds that
// waiter's name until the waiter takes it or its place lapses. Nobody cuts in meanwhile, not
// even a call that does not wait, and a waiter that is gone (here a name in line whose call
// never comes back) holds the key up for its lease at most.
func TestRealServersReleaseHandsTheKeyToTheFirstWaiter(t *testing.T) {
	t.Parallel()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	nodes := redistest.Clients(t, addrs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newClient := func() *redlock.Client {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder, newcomer := newClient(), newClient()
	held, err := holder.Lock(ctx, "handed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes { // Lock returned at a quorum: let the last SET land
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return node.Get(ctx, "handed").Val() == held.Token() })
	}
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	const lease = time.Second
	gone := wire.Waiter{Client: "gone", N: 1}.String()
	keys, args := wire.Acquire{Keys: names.Unfenced("handed"), Token: "never", TTL: time.Minute, Waiter: gone, Place: 1, Lease: lease}.Encode()
	for i, node := range nodes {
		if err := node.Eval(ctx, wire.AcquireScript.Source(), keys, args).Err(); err != nil {
			t.Fatalf("node %d: joining the line: %v", i, err)
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes {
		redistest.Eventually(t, fmt.Sprintf("node %d handed the key to the waiter", i), func() bool { return node.Get(ctx, "handed").Val() == gone })
		if d := node.PTTL(ctx, "handed").Val(); d <= 0 || d > lease {
			t.Fatalf("node %d keeps the hand-over for %v, want the waiter's lease (%v) at most", i, d, lease)
		}
	}
	in, err := newcomer.Inspect(ctx, "handed")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range in.Nodes {
		if in.Held || n.Token != "" || n.Waiter != gone {
			t.Fatalf("Inspect: held %v; node %d: token %q, waiter %q, want the waiter's name", in.Held, i, n.Token, n.Waiter)
		}
	}
	if l, err := newcomer.TryLock(ctx, "handed", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a TryLock cut in on a key handed to a waiter: %v, %v", l, err)
	}
	// The waiter never takes it: once its lease lapses the key is free again.
	var l *redlock.Lock
	redistest.Eventually(t, "the key is free once the waiter's lease lapsed", func() bool {
		l, err = newcomer.TryLock(ctx, "handed", time.Minute)
		return err == nil
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
