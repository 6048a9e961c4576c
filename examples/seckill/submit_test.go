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
	cfg := Config{Nodes: nodes, Lock: "redlock", TTL: time.Second} // the orders go to the first node
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
	if orders, _ := shop.Submissions.Submitted(ctx); len(orders) != 2 {
		t.Fatalf("orders %q, want one per form", orders)
	}
}
