package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// Eight Clients with fencing take turns on one key while one node of five is restarted twice:
// the lock keeps moving. The longest time with no holder stays far below the ttl: a restart
// costs the node, not the lock.
func TestRealServersRestartsDoNotStallTheLock(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 5, "--appendonly", "yes", "--appendfsync", "always")
	addrs := redistest.Addrs(ss)
	const ttl = 10 * time.Second
	var mu sync.Mutex
	var last time.Time // when the last holder released
	var longest time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithFencing(), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), ttl)
				l, err := c.Lock(ctx, "stock", ttl)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if !last.IsZero() {
					longest = max(longest, time.Since(last))
				}
				mu.Unlock()
				work(time.Millisecond)
				mu.Lock()
				last = time.Now()
				mu.Unlock()
				l.Unlock(context.Background())
			}
		})
	}
	for range 2 {
		elapse(500 * time.Millisecond)
		ss[1].Restart(t)
	}
	elapse(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("the longest time with no holder: %v", longest)
	if longest >= ttl/4 {
		t.Fatalf("no holder for %v while a node restarted: the lock stalled", longest)
	}
}
