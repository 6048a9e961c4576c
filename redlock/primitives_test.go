package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

func TestPrimitivesBadInputSendsNothing(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	if _, err := c.Semaphore("", 2); err == nil {
		t.Error("Semaphore with an empty key")
	}
	for _, p := range []int{0, -1} {
		if _, err := c.Semaphore("s", p); err == nil {
			t.Errorf("Semaphore of %d permits", p)
		}
	}
	if _, err := c.RWMutex(""); err == nil {
		t.Error("RWMutex with an empty key")
	}
	sem, err := c.Semaphore("s", 2)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.RWMutex("rw")
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) error { return nil }
	for _, ttl := range []time.Duration{0, -time.Second, 2 * time.Millisecond, 1500 * time.Microsecond} {
		for name, call := range map[string]func() error{
			"Semaphore.Lock":    func() error { _, err := sem.Lock(ctx, ttl); return err },
			"Semaphore.TryLock": func() error { _, err := sem.TryLock(ctx, ttl); return err },
			"Semaphore.Do":      func() error { return sem.Do(ctx, ttl, fn) },
			"RWMutex.Lock":      func() error { _, err := rw.Lock(ctx, ttl); return err },
			"RWMutex.TryLock":   func() error { _, err := rw.TryLock(ctx, ttl); return err },
			"RWMutex.RLock":     func() error { _, err := rw.RLock(ctx, ttl); return err },
			"RWMutex.TryRLock":  func() error { _, err := rw.TryRLock(ctx, ttl); return err },
			"RWMutex.Do":        func() error { return rw.Do(ctx, ttl, fn) },
			"RWMutex.RDo":       func() error { return rw.RDo(ctx, ttl, fn) },
			"LockAll":           func() error { _, err := c.LockAll(ctx, []string{"a"}, ttl); return err },
			"TryLockAll":        func() error { _, err := c.TryLockAll(ctx, []string{"a"}, ttl); return err },
			"Resume":            func() error { _, err := c.Resume(ctx, "a", "token", ttl); return err },
		} {
			if err := call(); err == nil || errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("%s(ttl %v): %v, want an input error", name, ttl, err)
			}
		}
	}
	for _, keys := range [][]string{nil, {}, {"a", ""}, {"a", "b", "a"}} {
		if _, err := c.LockAll(ctx, keys, time.Second); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("LockAll(%q): %v, want an input error", keys, err)
		}
		if _, err := c.TryLockAll(ctx, keys, time.Second); err == nil || errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryLockAll(%q): %v, want an input error", keys, err)
		}
	}
	for _, kt := range [][2]string{{"", "token"}, {"k", ""}} {
		if _, err := c.Resume(ctx, kt[0], kt[1], time.Second); err == nil || errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Resume(%q, %q): %v, want an input error", kt[0], kt[1], err)
		}
	}
	if err := sem.Do(ctx, time.Second, nil); err == nil {
		t.Error("Semaphore.Do with a nil fn")
	}
	if n := commands(ms); n != 0 {
		t.Fatalf("bad input sent %d commands", n)
	}
}

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
	redistest.Eventually(t, "every node keeps semaphore:{pool}", func() bool {
		for _, m := range ms {
			if !m.Exists("semaphore:{pool}") {
				return false
			}
		}
		return true
	})
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

// Every waiting acquisition is woken by the release it waits for, not by its retry timer
// (an hour here).
func TestWaitingPrimitivesWokenByRelease(t *testing.T) {
	_, c := cluster(t, 3, redlock.WithRetryDelay(time.Hour, time.Hour))
	ctx := context.Background()
	sem, _ := c.Semaphore("pool", 1)
	rw, _ := c.RWMutex("doc")
	lockAll := func(keys ...string) func(context.Context, time.Duration) (*redlock.Lock, error) {
		return func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) { return c.LockAll(ctx, keys, ttl) }
	}
	lock := func(key string) func(context.Context, time.Duration) (*redlock.Lock, error) {
		return func(ctx context.Context, ttl time.Duration) (*redlock.Lock, error) { return c.Lock(ctx, key, ttl) }
	}
	type acquire = func(context.Context, time.Duration) (*redlock.Lock, error)
	for _, tc := range []struct {
		name          string
		holder, waits acquire
	}{
		{"Semaphore.Lock behind a holder", sem.Lock, sem.Lock},
		{"RWMutex.Lock behind a reader", rw.RLock, rw.Lock},
		{"RWMutex.RLock behind a writer", rw.Lock, rw.RLock},
		{"RWMutex.Lock behind a writer", rw.Lock, rw.Lock},
		{"LockAll behind Lock", lock("b"), lockAll("a", "b")},
		{"LockAll behind LockAll", lockAll("b", "c"), lockAll("a", "b")},
		{"Lock behind LockAll", lockAll("a", "b"), lock("b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, err := tc.holder(ctx, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				l, err := tc.waits(ctx, 10*time.Second)
				if err == nil {
					err = l.Unlock(ctx)
				}
				got <- err
			}()
			time.Sleep(50 * time.Millisecond) // let it fail its first attempt and wait
			held.Unlock(ctx)
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter was not woken by the release")
			}
		})
	}
}

func TestRWMutexExcludesWritersAndWaitingWriterStopsReaders(t *testing.T) {
	ms, c := cluster(t, 3, redlock.WithRetryDelay(time.Hour, time.Hour))
	ctx := context.Background()
	rw, _ := c.RWMutex("doc")
	r1, err := rw.RLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if _, err := rw.TryLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock beside readers: %v", err)
	}
	for i, m := range ms {
		if m.Exists("writing:{doc}") {
			t.Fatalf("node %d: TryLock marked the lock", i)
		}
	}
	// A waiting writer marks the nodes: new readers are refused, and it gets in once the
	// readers leave, woken by their releases.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := make(chan *redlock.Lock, 1)
	go func() {
		w, err := rw.Lock(wctx, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	redistest.Eventually(t, "the waiting writer marks a majority", func() bool {
		n := 0
		for _, m := range ms {
			if m.Exists("writing:{doc}") {
				n++
			}
		}
		return n >= 2
	})
	if _, err := rw.TryRLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a reader behind a waiting writer: %v", err)
	}
	r1.Unlock(ctx)
	r2.Unlock(ctx)
	w := <-got
	if w == nil {
		t.FailNow()
	}
	if _, err := rw.TryRLock(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a reader beside the writer: %v", err)
	}
	if err := w.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "no node keeps the writer or its mark after Unlock", func() bool {
		for _, m := range ms {
			if m.Exists("writing:{doc}") || m.Exists("rwlock:{doc}") {
				return false
			}
		}
		return true
	})
	r, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	// A writer that stops waiting takes its mark away, and readers enter again.
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := rw.Lock(short, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer giving up: %v", err)
	}
	for i, m := range ms {
		if m.Exists("writing:{doc}") {
			t.Fatalf("node %d keeps the mark of a writer that gave up", i)
		}
	}
	r3, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("a reader after the writer gave up: %v", err)
	}
	r3.Unlock(ctx)
	r.Unlock(ctx)
}

// LockAll stores each key as Lock does: they exclude each other, and a refused LockAll leaves
// none of its keys on any node.
func TestLockAllIsAllOrNothingAndExcludesLock(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	held, err := c.Lock(ctx, "b", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLockAll(ctx, []string{"a", "b", "c"}, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLockAll over a held key: %v", err)
	}
	c.Close() // waits for the roll-backs
	for i, m := range ms {
		if m.Exists("a") || m.Exists("c") {
			t.Fatalf("node %d keeps %q after a refused LockAll", i, m.Keys())
		}
	}
	c, err = redlock.New(redistest.MiniClients(t, ms))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := held.Unlock(ctx); err == nil || !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock through a closed Client: %v", err) // the key expires instead
	}
	for _, m := range ms {
		m.Del("b")
	}
	all, err := c.TryLockAll(ctx, []string{"a", "b", "c"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Keys(); strings.Join(got, ",") != "a,b,c" || all.Key() != "a" || all.Fence() != 0 {
		t.Fatalf("Keys = %q, Key = %q", got, all.Key())
	}
	redistest.Eventually(t, "every node holds a, b and c under the token", func() bool {
		for _, m := range ms {
			for _, k := range []string{"a", "b", "c"} {
				if v, _ := m.Get(k); v != all.Token() {
					return false
				}
			}
		}
		return true
	})
	if _, err := c.TryLock(ctx, "c", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock of a key LockAll holds: %v", err)
	}
	if _, err := c.Resume(ctx, "a", all.Token(), 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Resume of a LockAll token: %v", err)
	}
	if err := all.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := all.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "no node keeps a key after Unlock", func() bool {
		for _, m := range ms {
			if len(m.Keys()) != 0 {
				return false
			}
		}
		return true
	})
}

// Resume from a second Client, standing in for another process, takes the first one's lock
// over: it extends and unlocks it. A wrong token, or another primitive's, gets ErrNotHeld.
func TestResumeTakesTheLockOver(t *testing.T) {
	ms, first := cluster(t, 3, redlock.WithFencing())
	second, err := redlock.New(redistest.MiniClients(t, ms))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ctx := context.Background()
	l, err := first.Lock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Resume(ctx, "job", l.Token()+"x", 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := second.Resume(ctx, "other", l.Token(), 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("wrong key: %v", err)
	}
	before := time.Now()
	r, err := second.Resume(ctx, "job", l.Token(), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Token() != l.Token() || r.Key() != "job" || r.Fence() != 0 || r.Until().Before(before.Add(19*time.Second)) {
		t.Fatalf("resumed: token %q, key %q, fence %d, until %v", r.Token(), r.Key(), r.Fence(), r.Until())
	}
	redistest.Eventually(t, "every node gives job the new ttl", func() bool {
		for _, m := range ms {
			if m.TTL("job") != 20*time.Second {
				return false
			}
		}
		return true
	})
	if err := r.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("the first holder extends after the hand-off: %v", err)
	}

	sem, _ := first.Semaphore("job", 2)
	s, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rw, _ := first.RWMutex("job")
	w, err := rw.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{s.Token(), w.Token()} {
		if _, err := second.Resume(ctx, "job", token, 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Resume of another primitive's token: %v", err)
		}
	}
}

// One key name used by every primitive at once: no WRONGTYPE. Lock and LockAll exclude each
// other; the semaphore and the RWMutex keep keys of their own, independent of the others.
func TestPrimitivesShareAKeyName(t *testing.T) {
	_, c := cluster(t, 3)
	ctx := context.Background()
	sem, _ := c.Semaphore("k", 1)
	rw, _ := c.RWMutex("k")
	s, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rw.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLockAll(ctx, []string{"j", "k"}, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) || strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("LockAll beside Lock: %v", err)
	}
	for _, l := range []*redlock.Lock{s, w, l} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.TryLockAll(ctx, []string{"j", "k"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "k", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock beside LockAll: %v", err)
	}
	r, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err = sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*redlock.Lock{all, r, s} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
