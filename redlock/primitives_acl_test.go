package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// The kinds that the doctor's dry runs cover are every key and channel the library touches:
// every primitive runs, its waits woken by announcements alone, for a user allowed those
// kinds only, and no command but those the doctor checks (and what a connection needs).
func TestACLOfTheDoctorRunsEveryPrimitive(t *testing.T) {
	t.Parallel()
	rules := append(redistest.ACLPatterns(redistest.ACLKinds(t, "app:"), -1), "-@all", "+@connection", "+unsubscribe")
	for _, cmd := range []string{"EVALSHA", "EVAL", "SET", "PUBLISH", "SUBSCRIBE", "TIME", "DEL", "EXISTS", "GET", "PEXPIRE",
		"PTTL", "ZADD", "ZCARD", "ZPOPMIN", "ZRANGE", "ZRANGEBYSCORE", "ZRANK", "ZREM", "ZREMRANGEBYSCORE", "ZSCORE"} {
		rules = append(rules, "+"+strings.ToLower(cmd))
	}
	ss := redistest.StartN(t, 3)
	client := func(opts ...redlock.Option) *redlock.Client {
		nodes := make([]redis.UniversalClient, len(ss))
		for i, s := range ss {
			nodes[i] = redistest.AddUser(t, s.Addr, "app", rules...)
		}
		c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithKeyPrefix("app:"), redlock.WithFencing(),
			redlock.WithNodeTimeout(2 * time.Second), redlock.WithRetryDelay(time.Hour, time.Hour)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	w, watch := watchWaits()
	c1, c2 := client(), client(watch)
	testPrimitivesOn(t, c1, c2, w, "orders")
	ctx := deadline(t)
	l, err := c1.Lock(ctx, "orders", 10*time.Second)
	if err != nil || l.Fence() == 0 {
		t.Fatalf("a fenced Lock: fence %v, %v", l.Fence(), err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := c2.Lock(ctx, "orders", 10*time.Second) // in line, woken by the release
		if err == nil {
			err = l2.Unlock(ctx)
		}
		got <- err
	}()
	w.await(t) // the waiter failed once, listens, and waits in line
	if in, err := c1.Inspect(ctx, "orders"); err != nil || !in.Held || in.Nodes[0].Fence == 0 {
		t.Fatalf("Inspect: %+v, %v", in, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the Lock in line returns", got); err != nil {
		t.Fatalf("the Lock in line: %v", err)
	}
	campaign(t, ctx, c1, c2, w)
}

// campaign runs an election of c1 and c2, whose waits w reports: c2 observes, c1 leads and
// proclaims, c2 waits in line and leads once c1 resigns.
func campaign(t *testing.T, ctx context.Context, c1, c2 *redlock.Client, w waits) {
	t.Helper()
	e1, _ := c1.Election("scheduler", 10*time.Second)
	e2, _ := c2.Election("scheduler", 10*time.Second)
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := e2.Observe(octx)
	redistest.Receive(t, "the first observation", changes)
	term, err := e1.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if l := redistest.Receive(t, "the leader observed", changes); l.Value != "a" || l.Term != term.Term() {
		t.Errorf("observed %+v, want a in term %d", l, term.Term())
	}
	if err := term.Proclaim(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.TryCampaign(ctx, "c"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a second candidate: %v", err)
	}
	next := make(chan error, 1)
	go func() {
		t2, err := e2.Campaign(ctx, "c")
		if err == nil {
			err = t2.Resign(ctx)
		}
		next <- err
	}()
	w.await(t) // in line
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the candidate in line leads", next); err != nil {
		t.Fatalf("the candidate in line: %v", err)
	}
}
