package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A mark won against concurrent duplicates ends on every node, not on the bare majority that
// the losers' attempts left it, so that one node coming back empty lets no duplicate through.
// 40 submissions of each of 20 forms at once, from 4 Clients on 5 real servers: the winner of
// each form orphans its mark; then every node holds each winner's token, and after one node
// restarts empty every form is refused.
func TestOrphanedMarkOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss := redistest.StartN(t, 5)
	raw := redistest.Clients(t, redistest.Addrs(ss)...)
	var clients []*redlock.Client
	for range 4 {
		c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	const forms, each, life = 20, 40, time.Minute
	marks := make([]string, forms) // the winner's token of each form, "" for none
	var taken [forms]atomic.Bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for f := range forms {
		for s := range each {
			wg.Go(func() {
				// Until one wins: a split vote that nobody won is tried again after a random
				// pause that doubles every try, as a submitter does; once one won, the others
				// are duplicates and stop.
				var mark *redlock.Lock
				for try, err := 0, errors.ErrUnsupported; err != nil; try++ {
					if try > 0 {
						work(time.Duration(rand.Int64N(int64(time.Millisecond) << min(try, 6))))
					}
					if taken[f].Load() || ctx.Err() != nil {
						return
					}
					mark, err = clients[s%len(clients)].TryLock(ctx, fmt.Sprint("submit:form-", f), life)
				}
				taken[f].Store(true)
				if err := mark.Orphan(ctx); err != nil {
					t.Errorf("form %d: Orphan: %v", f, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if marks[f] != "" {
					t.Errorf("form %d accepted twice", f)
				}
				marks[f] = mark.Token()
			})
		}
	}
	wg.Wait()
	won, short := 0, 0
	for f, token := range marks {
		if token == "" {
			continue // a split vote that nobody won: no mark
		}
		won++
		if n := holding(ctx, raw, fmt.Sprint("submit:form-", f), token); n < len(raw) {
			short++
			t.Errorf("form %d: its mark is on %d of %d nodes", f, n, len(raw))
		}
	}
	t.Logf("%d forms won, %d marks on fewer than %d nodes", won, short, len(raw))
	if won < forms {
		t.Fatalf("%d of %d forms won within a minute", won, forms)
	}
	ss[0].RestartEmpty(t)
	for f, token := range marks {
		if token == "" {
			continue
		}
		if l, err := clients[0].TryLock(ctx, fmt.Sprint("submit:form-", f), life); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("form %d after node 0 restarted empty: a duplicate was accepted (%v)", f, err)
			if l != nil {
				l.Unlock(ctx)
			}
		}
	}
}

// holding counts the nodes that hold key under token.
func holding(ctx context.Context, nodes []redis.UniversalClient, key, token string) int {
	n := 0
	for _, rc := range nodes {
		if v, err := rc.Get(ctx, key).Result(); err == nil && v == token {
			n++
		}
	}
	return n
}

// A graceful shutdown between a submission's TryLock and its Orphan deletes the mark (Close
// releases what the Client holds); Orphan then says so, so that the submission is not counted
// and a later one may be. On real servers.
func TestOrphanAfterCloseSaysTheMarkIsGone(t *testing.T) {
	ctx := context.Background()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	other, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mark, err := c.TryLock(ctx, "submit:form-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.Close() // the shutdown, in the middle of the request
	counted := mark.Orphan(ctx) == nil
	again, err := other.TryLock(ctx, "submit:form-1", time.Minute)
	if err == nil {
		defer again.Unlock(ctx)
	}
	if counted && err == nil {
		t.Fatal("the first submission counted, and its mark was gone: a second submission of the form was accepted too")
	}
	if err := mark.Orphan(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Orphan after Close released the lock: %v, want an error wrapping ErrClosed", err)
	}
}
