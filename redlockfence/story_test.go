package redlockfence_test

import (
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockfence"
)

// The story end to end, on 5 redis-servers: holder A takes a fenced lock and is paused (a
// goroutine blocked) past its validity; B takes the lock and writes; A wakes and writes: each
// resource, SQLite, PostgreSQL and Redis, refuses A with ErrStale and keeps B's write.
func TestPausedHolderRefused(t *testing.T) {
	addrs := redistest.Addrs(redistest.StartN(t, 5))
	a, b := lockClient(t, addrs), lockClient(t, addrs)
	res := newResources(t)
	ctx := deadline(t)
	const ttl = time.Second

	la, err := a.Lock(ctx, "acct", ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A holds %q on 5 nodes with token %d, valid for %v", "acct", la.Fence(), time.Until(la.Until()).Round(time.Millisecond))

	paused := make(chan []error)
	wake := make(chan struct{})
	go func() { // A: paused before its write, then writes as if nothing happened
		<-wake
		paused <- res.write(ctx, la.Fence(), "A")
	}()
	time.Sleep(time.Until(la.Until()))

	lb, err := b.Lock(ctx, "acct", ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B holds %q with token %d", "acct", lb.Fence())
	if lb.Fence() <= la.Fence() {
		t.Fatalf("B's token %d is not above A's %d", lb.Fence(), la.Fence())
	}
	for i, err := range res.write(ctx, lb.Fence(), "B") {
		if err != nil {
			t.Fatalf("B's write on %s: %v", names[i], err)
		}
		t.Logf("B writes on %s: accepted", names[i])
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	close(wake)
	t.Logf("A wakes, %v after its validity ended, and writes with token %d", time.Since(la.Until()).Round(time.Millisecond), la.Fence())
	for i, err := range <-paused {
		if !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("A's write on %s after B's: %v, want ErrStale", names[i], err)
		}
		t.Logf("A's write on %s: %v", names[i], err)
	}
	if err := la.Unlock(ctx); err == nil {
		t.Fatal("A's Unlock succeeded after B held the lock")
	}
	owners, logs := res.owners(t), res.logs(t)
	for i := range names {
		if owners[i] != "B" || !slices.Equal(logs[i], []int64{int64(lb.Fence())}) {
			t.Fatalf("%s: owner %q, accepted tokens %v; want B, [%d]", names[i], owners[i], logs[i], lb.Fence())
		}
	}
	t.Logf("every resource holds B's write: owners %v, accepted tokens %v", owners, logs)
}

// A lock made without WithFencing has token 0, which every guard refuses, saying why.
func TestLockWithoutFencing(t *testing.T) {
	ctx := deadline(t)
	c, err := redlock.New(redistest.MiniClients(t, redistest.Minis(t, 3)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Lock(ctx, "acct", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	s := store{redlockfence.SQLite, sqliteDB(t)}
	errs := []error{
		guard(t, s).Do(ctx, "acct", l.Fence(), func(*sql.Tx) error { return nil }),
		redlockfence.NewRedis(redistest.Client(t, miniredis.RunT(t).Addr())).Set(ctx, "acct", l.Fence(), "k", "v", 0),
	}
	for _, err := range errs {
		if err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), "without redlock.WithFencing") {
			t.Errorf("a write with the token of a lock without fencing: %v", err)
		}
	}
}
