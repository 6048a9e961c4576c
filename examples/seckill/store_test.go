package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/pgtest"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockfence"
)

// sqliteStore opens a store in a new SQLite file of t's, as -store sqlite does.
func sqliteStore(t *testing.T) Store {
	t.Helper()
	st, closeStore, err := openStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "seckill.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return st
}

// stores opens a store of each kind: SQLite, PostgreSQL (a server of t's) and Redis (a
// server of t's, none of the lock's nodes).
var stores = []struct {
	name string
	open func(t *testing.T) Store
}{
	{"sqlite", sqliteStore},
	{"postgres", func(t *testing.T) Store {
		st, closeStore, err := openStore(context.Background(), "postgres", pgtest.Start(t).DSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStore)
		return st
	}},
	{"redis", func(t *testing.T) Store { return NewRedisStore(redistest.Client(t, redistest.Start(t).Addr)) }},
}

// Buyer A's order reads the last item and is paused before its write, past its lock's
// validity, while buyer B takes the lock, reads the item and writes the sale; A's write comes
// after B's, or between B's read and B's write. With fencing tokens A's order is refused
// (ErrStale) rather than oversold, in both orders: B's read recorded B's token. Without
// them, it oversells.
func TestPausedOrder(t *testing.T) {
	nodes := redistest.Clients(t, redistest.Addrs(redistest.StartN(t, 3))...)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			st := s.open(t)
			for _, writes := range [][]string{{"B", "A"}, {"A", "B"}} {
				rep, errA := pausedSale(t, st, nodes, writes, redlock.WithFencing())
				t.Logf("with fencing, %s writes first: A's order: %v; %+v", writes[0], errA, rep)
				if !errors.Is(errA, redlockfence.ErrStale) || rep.Oversold != 0 || rep.Orders != 1 {
					t.Fatalf("with fencing, %s writing first: A's order returned %v, %+v; want ErrStale, one order, oversold 0", writes[0], errA, rep)
				}
				rep, errA = pausedSale(t, st, nodes, writes)
				t.Logf("without fencing, %s writes first: A's order: %v; %+v", writes[0], errA, rep)
				if errA != nil || rep.Oversold != 1 {
					t.Fatalf("without fencing, %s writing first: A's order returned %v, %+v; want it to oversell by one", writes[0], errA, rep)
				}
			}
		})
	}
}

// pausedSale sells the last item of st twice. Buyer A's order reads it and pauses before its
// write; buyer B, with a Client of its own, takes the lock once A's has expired, reads the item
// and pauses before its write too; then each writes, in the order of writes ("A" and "B"). It
// returns the shop's report and A's error.
func pausedSale(t *testing.T, st Store, nodes []redis.UniversalClient, writes []string, opts ...redlock.Option) (Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 500 * time.Millisecond
	a, b := newClient(t, nodes, opts...), newClient(t, nodes, opts...)
	shops := map[string]*Shop{
		"A": {Store: pausing(st), Locker: pausedLocker{a, ttl}, Item: "last-one"},
		"B": {Store: pausing(st), Locker: Redlock{Client: b, TTL: ttl}, Item: "last-one"},
	}
	if err := st.Restock(ctx, "last-one", 1); err != nil {
		t.Fatal(err)
	}
	done := map[string]chan error{"A": make(chan error, 1), "B": make(chan error, 1)}
	for _, buyer := range []string{"A", "B"} { // B's lock waits for A's to expire
		go func() { done[buyer] <- shops[buyer].Order(ctx, buyer) }()
		select {
		case <-shops[buyer].Store.(*pausingStore).paused:
		case err := <-done[buyer]:
			t.Fatalf("%s's order ended before its write: %v", buyer, err)
		}
	}
	errs := map[string]error{}
	for _, buyer := range writes {
		close(shops[buyer].Store.(*pausingStore).resume)
		errs[buyer] = <-done[buyer]
	}
	if errs["B"] != nil {
		t.Fatalf("B's order: %v", errs["B"])
	}
	rep, err := st.Count(ctx, "last-one", 1)
	if err != nil {
		t.Fatal(err)
	}
	return rep, errs["A"]
}

func newClient(t *testing.T, nodes []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pausingStore is a Store whose Sell pauses until resume is closed, as a process paused
// between its read and its write.
type pausingStore struct {
	Store
	paused, resume chan struct{}
}

func pausing(st Store) *pausingStore {
	return &pausingStore{Store: st, paused: make(chan struct{}), resume: make(chan struct{})}
}

func (p *pausingStore) Sell(ctx context.Context, item string, fence uint64, left int, buyer string) error {
	close(p.paused)
	<-p.resume
	return p.Store.Sell(ctx, item, fence, left, buyer)
}

// pausedLocker is this library's lock taken by a process that is paused once it holds it:
// nothing extends it, and the process does not notice when it expires.
type pausedLocker struct {
	c   *redlock.Client
	ttl time.Duration
}

func (p pausedLocker) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	l, err := p.c.Lock(ctx, key, p.ttl)
	if err != nil {
		return err
	}
	defer l.Unlock(ctx)
	return fn(withFence(ctx, l.Fence()))
}
