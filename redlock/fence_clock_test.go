package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A fence case: on n nodes, node off has a clock far off; the first acquisition is granted by
// the nodes of mask first, the second by those of mask second, and between the two node lost,
// which both granted, loses its data. Tokens must strictly increase.
type fenceCase struct {
	n, off, lost  int
	skew          time.Duration
	first, second uint
}

func (fc fenceCase) String() string {
	return fmt.Sprintf("n=%d node %d off by %v, first %0*b, second %0*b, node %d lost its data",
		fc.n, fc.off, fc.skew, fc.n, fc.first, fc.n, fc.second, fc.lost)
}

// fenceCases lists, for n nodes, the pairs of grant sets of a quorum or more that share the
// fewest nodes (one for odd n, two for even n; where more are shared, one that kept its data
// keeps the counter) with one of those losing its data, and every node's clock an hour behind
// or ahead; past 60 cases, a seeded sample.
func fenceCases(n int) []fenceCase {
	var quorums []uint
	for m := uint(1); m < 1<<n; m++ {
		if bits.OnesCount(m) >= n/2+1 {
			quorums = append(quorums, m)
		}
	}
	least := max(1, 2*(n/2+1)-n) // the fewest nodes two quorums share
	var cases []fenceCase
	for _, a := range quorums {
		for _, b := range quorums {
			if bits.OnesCount(a&b) != least {
				continue
			}
			for lost := range n {
				if a&b&(1<<lost) == 0 {
					continue
				}
				for off := range n {
					for _, skew := range []time.Duration{-time.Hour, time.Hour} {
						cases = append(cases, fenceCase{n: n, off: off, lost: lost, skew: skew, first: a, second: b})
					}
				}
			}
		}
	}
	if len(cases) > 60 {
		rng := rand.New(rand.NewPCG(uint64(n), 27))
		rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
		cases = cases[:60]
	}
	return cases
}

// Fencing tokens strictly increase when one node's clock is far off (behind or ahead) and the
// one node that two acquisitions share loses its data between them, for 1 to 7 nodes and sets
// of granting nodes of every size: the assumptions docs/locks.md states.
func TestFenceNeverGoesBackWithOneClockFarOffAndOneDataLoss(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) { fenceNeverGoesBack(t, n) })
	}
}

// fenceNeverGoesBack plays fenceCases(n) on n nodes.
func fenceNeverGoesBack(t *testing.T, n int) {
	t.Helper()
	ms := redistest.Minis(t, n)
	clients := redistest.MiniClients(t, ms)
	for i, fc := range fenceCases(n) {
		key := fmt.Sprintf("k%d", i)
		first, second := fenceRun(t, ms, clients, key, fc)
		if second <= first {
			t.Fatalf("%v: token went backwards: %d after %d", fc, second, first)
		}
	}
}

// fenceRun plays fc on the nodes ms for key and returns the two tokens.
func fenceRun(t *testing.T, ms []*miniredis.Miniredis, clients []redis.UniversalClient, key string, fc fenceCase) (uint64, uint64) {
	t.Helper()
	ctx := context.Background()
	acquire := func(grant uint) uint64 {
		for i, m := range ms {
			if grant&(1<<i) == 0 {
				m.Set(key, "someone-else") // refuses
			}
		}
		// A Client of its own, closed once it released, so that no call of it is still
		// on its way to the nodes that refused when the next acquisition begins.
		c, err := redlock.New(clients, redlock.WithFencing(), redlock.WithNodeTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.TryLock(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("%v: %v", fc, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("%v: %v", fc, err)
		}
		c.Close()
		for _, m := range ms {
			m.Del(key)
		}
		return l.Fence()
	}
	ms[fc.off].SetTime(time.Now().Add(fc.skew))
	defer ms[fc.off].SetTime(time.Time{})
	first := acquire(fc.first)
	ms[fc.lost].FlushAll()
	if fc.lost == fc.off {
		ms[fc.off].SetTime(time.Now().Add(fc.skew)) // a restart keeps the clock off
	}
	elapse(10 * time.Microsecond) // the true clocks move on
	return first, acquire(fc.second)
}

// The same on three real servers, node A's clock an hour behind (libfaketime), as an operator
// would meet it: a term and a fenced lock are won on B and C while A is stopped; A continues; C
// is killed, stays down longer than the ttl and comes back empty; B stops; a fresh Client wins
// on A and C. Its term and its token must be larger.
func TestRealServersTermAndFenceNeverGoBackWithAClockBehind(t *testing.T) {
	// Not parallel: its timing is for a machine running one test at a time.
	a := redistest.StartOffset(t, -time.Hour)
	b, c := redistest.Start(t), redistest.Start(t)
	addrs := []string{a.Addr, b.Addr, c.Addr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 2 * time.Second // long against a busy machine's pauses
	win := func() (term, fence uint64) {
		t.Helper()
		cl, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		e, err := cl.Election("svc", ttl)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := e.Campaign(ctx, "me")
		if err != nil {
			t.Fatal(err)
		}
		l, err := cl.Lock(ctx, "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		term, fence = tm.Term(), l.Fence()
		if err := errors.Join(tm.Resign(ctx), l.Unlock(ctx)); err != nil {
			t.Fatal(err)
		}
		return term, fence
	}
	a.Pause(t)
	term1, fence1 := win()
	a.Resume()
	c.Kill()
	elapse(ttl + ttl/5)
	c.RestartEmpty(t)
	b.Pause(t)
	term2, fence2 := win()
	if term2 <= term1 || fence2 <= fence1 {
		t.Fatalf("went backwards: term %d after %d, fence %d after %d", term2, term1, fence2, fence1)
	}
}
