package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// On an RWMutex, a lock for reading taken with the context of a held lock for writing sends
// nothing, and its Unlock leaves the writer's lock held; so do a lock for writing inside it and
// a lock for reading inside a lock for reading. A lock for writing asked for with the context of
// a held lock for reading fails at once, sending nothing and running no fn.
func TestReenterRWMutex(t *testing.T) {
	var sent rounds
	ms, c := cluster(t, 3, sent.option())
	b := clientOn(t, ms)
	ctx := context.Background()
	rw := rwMutex(t, c, "doc")
	other := rwMutex(t, b, "doc")
	w, err := rw.Lock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := sent.n.Load()
	err = rw.Do(w.Context(ctx), time.Second, func(ctx context.Context) error {
		r, err := rw.TryRLock(ctx, time.Second)
		if err != nil {
			return err
		}
		if err := r.Unlock(ctx); err != nil {
			return err
		}
		return rw.RDo(ctx, time.Second, func(context.Context) error { return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("re-entering the lock for writing made %d rounds of node calls", n)
	}
	if _, err := other.TryRLock(ctx, time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another Client's reader after the inner handles' Unlock: %v", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	r, err := rw.RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held := r.Context(ctx)
	before = sent.n.Load()
	inner, err := rw.RLock(held, time.Second)
	if err != nil || inner.Token() != r.Token() {
		t.Fatalf("a reader inside a reader: %v", err)
	}
	inner.Unlock(ctx)
	ran := false
	err = rw.Do(within(t, held, 5*time.Second), time.Second, func(context.Context) error { ran = true; return nil })
	if err == nil || ran || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer inside a reader: %v, fn ran: %v; want an error at once", err, ran)
	}
	if _, err := rw.TryLock(held, time.Second); err == nil {
		t.Fatal("TryLock for writing inside a reader succeeded")
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("a reader inside a reader and a refused writer made %d rounds of node calls", n)
	}
	r.Unlock(ctx)
}

// LockAll re-enters a LockAll of the same keys, in any order; a LockAll of other keys fails at
// once (it would wait for itself on the keys held). A Semaphore's permit never re-enters: a
// second permit is a second permit.
func TestReenterLockAllAndNotSemaphore(t *testing.T) {
	var sent rounds
	_, c := cluster(t, 3, sent.option())
	ctx := context.Background()
	all, err := c.LockAll(ctx, []string{"a", "b"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held := all.Context(ctx)
	before := sent.n.Load()
	in, err := c.TryLockAll(held, []string{"b", "a"}, time.Second)
	if err != nil || in.Token() != all.Token() {
		t.Fatalf("LockAll of the same keys: %v", err)
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("re-entering LockAll made %d rounds of node calls", n)
	}
	in.Unlock(ctx)
	if _, err := c.TryLockAll(held, []string{"a", "b", "c"}, time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("LockAll of other keys: %v, want ErrNotAcquired", err)
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("a LockAll that would wait for itself made %d rounds of node calls", n)
	}
	all.Unlock(ctx)

	one := semaphore(t, c, "pool", 1)
	two := semaphore(t, c, "pool2", 2)
	p, err := two.Lock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	q, err := two.TryLock(p.Context(ctx), time.Minute)
	if err != nil || q.Token() == p.Token() {
		t.Fatalf("a second permit with the first's context: %v", err)
	}
	p1, err := one.Lock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.TryLock(p1.Context(ctx), time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("the only permit, asked for with its holder's context: %v, want ErrNotAcquired", err)
	}
	for _, l := range []*redlock.Lock{p, q, p1} {
		l.Unlock(ctx)
	}
}
