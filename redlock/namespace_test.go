package redlock_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// Every key and channel the library touches is under WithKeyPrefix: with an ACL user limited to
// "app:*" keys and channels, every primitive works, waiters are woken by releases (the retry
// timer is an hour), and the servers logged no refusal (ACL LOG) whatever the library did in
// the background: roll-backs, subscriptions, a waiter giving up.
func TestRealServersEverythingUnderThePrefix(t *testing.T) {
	ss := make([]*redistest.Server, 3)
	nodes := func() []redis.UniversalClient {
		cs := make([]redis.UniversalClient, len(ss))
		for i, s := range ss {
			cs[i] = redistest.ACLClient(t, s.Addr, "alice", "pw")
		}
		return cs
	}
	for i := range ss {
		ss[i] = redistest.StartRestricted(t, "alice", "pw", "app:*", "app:*")
	}
	newClient := func(opts ...redlock.Option) *redlock.Client {
		opts = append([]redlock.Option{redlock.WithKeyPrefix("app:"), redlock.WithNodeTimeout(2 * time.Second),
			redlock.WithRetryDelay(time.Hour, time.Hour)}, opts...)
		c, err := redlock.New(nodes(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	waiting, watch := watchWaits()
	for _, opts := range [][]redlock.Option{nil, {redlock.WithFencing()}} {
		a, b := newClient(opts...), newClient(append(opts, watch)...)
		handOff(t, waiting, func(c *redlock.Client) func(context.Context) (*redlock.Lock, error) {
			return func(ctx context.Context) (*redlock.Lock, error) { return c.Lock(ctx, "orders", 10*time.Second) }
		}, a, b)
	}
	a, b := newClient(), newClient(watch)
	handOff(t, waiting, func(c *redlock.Client) func(context.Context) (*redlock.Lock, error) {
		return func(ctx context.Context) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"orders", "invoices"}, 10*time.Second)
		}
	}, a, b)
	handOff(t, waiting, func(c *redlock.Client) func(context.Context) (*redlock.Lock, error) {
		s, err := c.Semaphore("pool", 1)
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context) (*redlock.Lock, error) { return s.Lock(ctx, 10*time.Second) }
	}, a, b)
	handOff(t, waiting, func(c *redlock.Client) func(context.Context) (*redlock.Lock, error) {
		m, err := c.RWMutex("doc")
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context) (*redlock.Lock, error) { return m.Lock(ctx, 10*time.Second) }
	}, a, b)
	m := rwMutex(t, a, "doc")
	r, err := m.RLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A waiting writer that gives up takes its mark away.
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	mb := rwMutex(t, b, "doc")
	if _, err := mb.Lock(wctx, 10*time.Second); err == nil {
		t.Fatal("a writer took a lock a reader holds")
	}
	cancel()
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	for i, s := range ss {
		c := redistest.ACLClient(t, s.Addr, "alice", "pw")
		entries, err := c.Do(ctx, "ACL", "LOG").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			t.Errorf("node %d refused %d commands outside the prefix; the first: %v", i, len(entries), entries[0])
		}
	}
}

// handOff has a hold the lock that lock(a) takes while lock(b) waits, then release it: the
// release wakes b, whose retry timer is an hour, within seconds.
func handOff(t *testing.T, waiting waits, lock func(*redlock.Client) func(context.Context) (*redlock.Lock, error), a, b *redlock.Client) {
	t.Helper()
	ctx := context.Background()
	held, err := lock(a)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting.reset()
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l, err := lock(b)(wctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	waiting.await(t)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the waiter returns after the release", got); err != nil {
		t.Fatalf("the waiter was not handed the lock: %v", err)
	}
}

// No key a user can name is another key's companion (its queue, fencing counter, a primitive's
// keys): after every primitive ran on "orders" with waiters and fencing, every key on the nodes
// but the lock key itself is refused as a key, as bad input that sends nothing, whatever the
// prefix.
func TestCompanionKeysCannotBeNamed(t *testing.T) {
	for _, prefix := range []string{"", "app:", "{tenant}:"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			waiting, watch := watchWaits()
			ms, c := cluster(t, 3, redlock.WithKeyPrefix(prefix), redlock.WithFencing(), watch)
			ctx := context.Background()
			held, err := c.Lock(ctx, "orders", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			s := semaphore(t, c, "orders", 2)
			if _, err := s.TryLock(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			m := rwMutex(t, c, "orders")
			if _, err := m.RLock(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			// Two waiters stay in line while the keys are read: one queued for the lock, a
			// writer marking the RWMutex its readers hold.
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 2)
			go func() { _, err := c.Lock(wctx, "orders", time.Minute); done <- err }()
			waiting.await(t)
			go func() { _, err := m.Lock(wctx, time.Minute); done <- err }()
			waiting.await(t)
			// Every node's keys: a waiter's attempt is decided, and its Round reported, once two
			// nodes of three refused it; the third may run it later (node 0, read alone, lacked
			// the queue, the leases and the writer's mark when its reply was late).
			keys := map[string]bool{}
			for _, m := range ms {
				for _, k := range m.Keys() {
					keys[k] = true
				}
			}
			cancel()
			for range 2 {
				redistest.Receive(t, "a waiter returns when its context ends", done)
			}
			var names []string
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				if k != prefix+"orders" {
					names = append(names, strings.TrimPrefix(k, prefix))
				}
			}
			if len(names) < 6 { // fence, leases, queue, readers, semaphore, writing
				t.Fatalf("only %q beside the lock key: the primitives left no companions to check", names)
			}
			// A fresh Client on fresh nodes refuses them, so that the first Client's calls that
			// end in the background (the waiters' withdrawals) are not counted.
			ms2, c2 := cluster(t, 3, redlock.WithKeyPrefix(prefix), redlock.WithFencing())
			before := commands(ms2)
			for _, name := range names {
				_, err := c2.TryLock(ctx, name, time.Minute)
				if err == nil || errors.Is(err, redlock.ErrNotAcquired) {
					t.Errorf("TryLock(%q), a companion key of \"orders\" = %v; want it refused as bad input", name, err)
				}
			}
			if n := commands(ms2) - before; n != 0 {
				t.Errorf("refusing companion names sent %d commands", n)
			}
			held.Unlock(ctx)
		})
	}
}
