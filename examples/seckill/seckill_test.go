package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	goleak.VerifyTestMain(m)
}

// The flash sale, 500 requests 100 at a time, each order working longer than the lock's ttl:
// this library sells exactly the stock; the naive lock oversells. The stock is in SQLite, the
// default store.
func TestFlashSale(t *testing.T) {
	nodes := redistest.Clients(t, redistest.Addrs(redistest.StartN(t, 3))...)
	cfg := Config{Nodes: nodes, Store: sqliteStore(t), Stock: 3, Requests: 500, Concurrency: 100,
		TTL: time.Second, Work: 1500 * time.Millisecond}
	var out strings.Builder
	ctx := context.Background()

	cfg.Lock = "redlock"
	rep, load, err := Sale(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	// An order whose lock is found lost just after its write is recorded but answered 503, so
	// orders may exceed accepted requests by failed ones; never by more.
	if rep.Oversold != 0 || rep.Orders < load.Accepted || rep.Orders > load.Accepted+load.Failed ||
		load.Accepted+load.SoldOut+load.Failed != cfg.Requests {
		t.Fatalf("redlock: %+v %+v: want oversold 0 and an order for every accepted request", rep, load)
	}
	if load.Accepted == 0 {
		t.Fatalf("redlock sold nothing: %+v", load)
	}

	cfg.Lock = "naive"
	out.Reset()
	rep, load, err = Sale(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if rep.Oversold <= 0 {
		t.Fatalf("naive: %+v %+v: the naive lock should oversell when an order outlasts its ttl", rep, load)
	}
}
