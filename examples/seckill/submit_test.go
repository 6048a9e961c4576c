package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// One form, its token sent by 50 buyers' goroutines at once to the shop on five real servers:
// exactly one order is recorded, and the other 49 are told it is a duplicate. Another form's
// token is then accepted, once.
func TestSubmitOnce(t *testing.T) {
	nodes := redistest.Clients(t, redistest.Addrs(redistest.StartN(t, 5))...)
	cfg := Config{Nodes: nodes, Store: sqliteStore(t), Lock: "redlock", TTL: time.Second}
	shop, closeShop, err := cfg.shop()
	if err != nil {
		t.Fatal(err)
	}
	defer closeShop()
	srv := httptest.NewServer(shop)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	send := func(token string, n int) map[int]int {
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				code := post(ctx, srv.Client(), srv.URL+"/submit?token="+token)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return codes
	}
	codes := send("form-5d41402a", 50)
	orders, err := shop.Submissions.Submitted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("50 submissions of one token: %d accepted (200), %d duplicates (409), %d other; orders recorded: %d %q",
		codes[http.StatusOK], codes[http.StatusConflict], 50-codes[http.StatusOK]-codes[http.StatusConflict], len(orders), orders)
	if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 49 || len(orders) != 1 || orders[0] != "form-5d41402a" {
		t.Fatalf("want exactly one order and 49 duplicates: codes %v, orders %q", codes, orders)
	}
	if codes := send("form-7d793037", 3); codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 2 {
		t.Fatalf("another form: codes %v, want one accepted", codes)
	}
	if code := post(ctx, srv.Client(), srv.URL+"/submit"); code != http.StatusBadRequest {
		t.Fatalf("a form without a token: %d, want 400", code)
	}
	orders, err = shop.Submissions.Submitted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(orders) != 2 {
		t.Fatalf("orders %q, want one per form", orders)
	}
}

// A submission whose order could not be recorded is not a duplicate: the shop answers 503 and
// releases the form's mark, and the form sent again is accepted, once. The orders are kept on
// a real redis-server of their own, none of the lock's five nodes, which is killed (refusing
// connections) or stopped (silent until the recording failed, its write landing later) for the
// first submission: either way one order is recorded.
func TestSubmitRetriedAfterAFailedRecording(t *testing.T) {
	for _, fault := range []string{"killed", "stopped"} {
		t.Run(fault, func(t *testing.T) {
			nodes := redistest.Clients(t, redistest.Addrs(redistest.StartN(t, 5))...)
			orders := redistest.Start(t)
			cfg := Config{Nodes: nodes, Store: NewRedisStore(redistest.Client(t, orders.Addr)), Lock: "redlock", TTL: time.Second}
			shop, closeShop, err := cfg.shop()
			if err != nil {
				t.Fatal(err)
			}
			defer closeShop()
			srv := httptest.NewServer(shop)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const form = "form-c4ca4238"
			switch fault {
			case "killed":
				orders.Kill()
				if code := post(ctx, srv.Client(), srv.URL+"/submit?token="+form); code != http.StatusServiceUnavailable {
					t.Fatalf("with the orders' store down: %d, want 503", code)
				}
				orders.Restart(t)
			case "stopped":
				orders.Pause(t)
				short, cancel := context.WithTimeout(ctx, time.Second)
				if code := post(short, srv.Client(), srv.URL+"/submit?token="+form); code == http.StatusOK {
					t.Fatalf("with the orders' store stopped: %d", code)
				}
				cancel()
				// The recording fails once go-redis's read times out, and the mark is released;
				// the write it sent lands when the store continues, and the form counts once.
				redistest.Eventually(t, "the mark released after the failed recording", func() bool {
					in, err := shop.Submissions.Client.Inspect(ctx, "submit:"+form)
					return err == nil && !in.Held
				})
				orders.Resume()
			}
			codes := map[int]int{}
			for range 3 {
				codes[post(ctx, srv.Client(), srv.URL+"/submit?token="+form)]++
			}
			recorded, err := shop.Submissions.Submitted(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the form sent 3 times again: %d accepted, %d duplicates; orders recorded: %q",
				codes[http.StatusOK], codes[http.StatusConflict], recorded)
			if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 2 || len(recorded) != 1 {
				t.Fatalf("want one accepted, two duplicates and one order: codes %v, orders %q", codes, recorded)
			}
		})
	}
}
