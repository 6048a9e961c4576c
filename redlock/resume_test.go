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

// Resume from a second Client, standing in for another process, takes the first one's lock
// over: it extends and unlocks it. A wrong token, or another primitive's, gets ErrNotHeld.
func TestResumeTakesTheLockOver(t *testing.T) {
	ms, first := cluster(t, 3, redlock.WithFencing())
	second, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ctx := context.Background()
	l, err := first.Lock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Lock returned at a quorum: let the last node take the key, so that Resume finds it there.
	onEveryNode(t, ms, "every node holds job", func(m *miniredis.Miniredis) bool { v, _ := m.Get("job"); return v == l.Token() })
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
	// Resume returned at a quorum: those nodes gave job the new ttl (a third one may be late,
	// and miss it when its reply does not come within the node timeout).
	renewed := 0
	for _, m := range ms {
		if m.TTL("job") == 20*time.Second {
			renewed++
		}
	}
	if renewed < 2 {
		t.Fatalf("%d of 3 nodes give job the new ttl after Resume returned; want a quorum", renewed)
	}
	if err := r.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("the first holder extends after the hand-off: %v", err)
	}

	sem := semaphore(t, first, "job", 2)
	s, err := sem.TryLock(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rw := rwMutex(t, first, "job")
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
