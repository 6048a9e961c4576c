package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

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
	for i, m := range ms { // the roll-backs run after TryLockAll returned
		redistest.Eventually(t, fmt.Sprintf("node %d keeps nothing of the refused LockAll", i), func() bool {
			return !m.Exists("a") && !m.Exists("c")
		})
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms { // the release of the last node may still be in flight
		redistest.Eventually(t, fmt.Sprintf("node %d released b", i), func() bool { return !m.Exists("b") })
	}
	all, err := c.TryLockAll(ctx, []string{"a", "b", "c"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Keys(); strings.Join(got, ",") != "a,b,c" || all.Key() != "a" || all.Fence() != 0 {
		t.Fatalf("Keys = %q, Key = %q", got, all.Key())
	}
	// A quorum holds them; the last node too, unless the refused attempt's call to it, late,
	// took the keys there first (then its roll-back frees them).
	redistest.Eventually(t, "a quorum holds a, b and c under the token", func() bool {
		holding := 0
		for _, m := range ms {
			va, _ := m.Get("a")
			vb, _ := m.Get("b")
			vc, _ := m.Get("c")
			if va == all.Token() && vb == all.Token() && vc == all.Token() {
				holding++
			}
		}
		return holding >= 2
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
	onEveryNode(t, ms, "no node keeps a key after Unlock", func(m *miniredis.Miniredis) bool { return len(m.Keys()) == 0 })
}
