package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

func TestFenceIsZeroWithoutFencing(t *testing.T) {
	_, c := cluster(t, 3)
	l, err := c.TryLock(context.Background(), "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() != 0 {
		t.Fatalf("Fence() = %d without WithFencing", l.Fence())
	}
}

// The failure DESIGN.md describes for the largest clock: node 0's clock runs an hour ahead and
// is in the first quorum; node 2, the only node both quorums share, then loses its data. With
// the median clock the second token is still the larger.
func TestFenceSurvivesAFastClockAndADataLoss(t *testing.T) {
	ms, c := cluster(t, 5, redlock.WithFencing())
	ctx := context.Background()
	hold := func(nodes ...int) {
		for _, i := range nodes {
			ms[i].Set("k", "someone-else")
		}
	}
	free := func(nodes ...int) {
		for _, i := range nodes {
			ms[i].Del("k")
		}
	}
	ms[0].SetTime(time.Now().Add(time.Hour))

	hold(3, 4) // the first quorum is nodes 0, 1, 2
	first, err := c.TryLock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close() // every node answered
	free(3, 4)
	hold(0, 1) // the second quorum is nodes 2, 3, 4
	ms[2].FlushAll()

	// A fresh Client dials its nodes on its first call: with the default 100 ms node timeout,
	// under -race beside four busy loops (load 9), none of nodes 1 to 4 answered in time. The
	// test is about the token, not speed: the node timeout of cluster's Clients.
	c2, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithFencing(), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	elapse(time.Millisecond) // the true clocks move on
	second, err := c2.TryLock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fence() <= first.Fence() {
		t.Fatalf("fencing token went backwards: %d after %d", second.Fence(), first.Fence())
	}
	if first.Fence() > uint64(time.Now().Add(time.Minute).UnixMicro()) {
		t.Fatalf("the fast clock set the token: %d", first.Fence())
	}
}

// Round 1 succeeds everywhere but round 2 reaches only one node of three: the acquisition
// fails, says why, and is rolled back on every node.
func TestFencingRoundFailureRollsBack(t *testing.T) {
	round2 := wire.FenceScript.SHA1()
	ms, c := cluster(t, 3, redlock.WithFencing())
	for _, m := range ms[:2] {
		m.Server().SetPreHook(func(p *server.Peer, cmd string, args ...string) bool {
			if strings.EqualFold(cmd, "EVALSHA") && len(args) > 0 && args[0] == round2 {
				p.WriteError("ERR injected: round 2 refused")
				return true
			}
			return false
		})
	}
	_, err := c.TryLock(context.Background(), "k", time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "fencing round") {
		t.Fatalf("TryLock = %v, want ErrNotAcquired from the fencing round", err)
	}
	c.Close()
	for i, m := range ms {
		if m.Exists("k") {
			t.Fatalf("node %d kept the key of an attempt whose fencing round failed", i)
		}
	}
}

// 1,000 acquisitions by four clients of five real servers, with restarts that keep data (AOF,
// fsync always) and one that loses it: every token is larger than the one before.
func TestRealServersFenceStrictlyIncreasesAcrossRestarts(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 5, "--appendonly", "yes", "--appendfsync", "always")
	addrs := redistest.Addrs(ss)
	var mu sync.Mutex
	var tokens []uint64
	const clients, each = 4, 250
	var wg sync.WaitGroup
	for id := range clients {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithFencing(), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			for n := range each {
				l, err := c.Lock(context.Background(), "stock", 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				tokens = append(tokens, l.Fence())
				mu.Unlock()
				if id == 0 { // restart a node while holding the lock: at most one node changes
					switch n {
					case 60, 120:
						ss[n/60].Restart(t)
					case 180:
						ss[3].RestartEmpty(t)
					}
				}
				if err := l.Unlock(context.Background()); err != nil && !errors.Is(err, redlock.ErrNotHeld) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(tokens) != clients*each {
		t.Fatalf("%d acquisitions, want %d", len(tokens), clients*each)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("acquisition %d: token %d after %d", i, tokens[i], tokens[i-1])
		}
	}
}
