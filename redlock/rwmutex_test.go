package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

func TestRWMutexExcludesWritersAndWaitingWriterStopsReaders(t *testing.T) {
	ms, c := cluster(t, 3, redlock.WithRetryDelay(time.Hour, time.Hour))
	ctx := context.Background()
	rw := rwMutex(t, c, "doc")
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
		if m.Exists(companion("writing", "doc")) {
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
			if m.Exists(companion("writing", "doc")) {
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
	onEveryNode(t, ms, "no node keeps the writer or its mark after Unlock", func(m *miniredis.Miniredis) bool {
		return !(m.Exists(companion("writing", "doc")) || m.Exists(companion("rwlock", "doc")))
	})
	r, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	// A writer that stops waiting takes its mark away (right after it returned: the clean-up
	// does not delay its return past its deadline), and readers enter again.
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := rw.Lock(short, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer giving up: %v", err)
	}
	onEveryNode(t, ms, "no node keeps the mark of a writer that gave up", func(m *miniredis.Miniredis) bool {
		return !m.Exists(companion("writing", "doc"))
	})
	r3, err := rw.TryRLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("a reader after the writer gave up: %v", err)
	}
	r3.Unlock(ctx)
	r.Unlock(ctx)
}
