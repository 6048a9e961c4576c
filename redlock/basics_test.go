package redlock_test

// The promises the other tests build on, each checked within a second on in-memory nodes:
// quorum size, the drift allowance, the roll-back of a failed attempt, the owner checks of
// Extend and Unlock, the fencing token's rules, the lost-lock signal, Close's release, the
// hand-over to the next waiter and election terms. Go runs a package's tests file by file in the
// order of their names, so these come first: a mechanism that breaks fails here within seconds
// of the package starting, before the tests on real servers, which take minutes.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// For five nodes, every subset of unavailable ones: the lock is acquired iff three or more are
// free, and a failed attempt leaves no key of its own behind.
func TestTryLockEverySubsetOfFiveNodes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"down", "taken"} {
		t.Run(mode, func(t *testing.T) {
			for mask := range 1 << 5 {
				ms, c := cluster(t, 5)
				free := 0
				for i, m := range ms {
					switch {
					case mask&(1<<i) == 0:
						free++
					case mode == "down":
						m.Close()
					default:
						m.Set("orders:42", "someone-else")
					}
				}
				l, err := c.TryLock(context.Background(), "orders:42", 10*time.Second)
				if want := free >= 3; (err == nil) != want {
					t.Fatalf("mask %05b (%d free): err = %v, want acquired = %v", mask, free, err, want)
				}
				if err != nil {
					if !errors.Is(err, redlock.ErrNotAcquired) {
						t.Fatalf("mask %05b: %v does not wrap ErrNotAcquired", mask, err)
					}
					var ne *redlock.NodeError
					if !errors.As(err, &ne) || mask&(1<<ne.Node) == 0 {
						t.Fatalf("mask %05b: %v: want a NodeError naming a failed node", mask, err)
					}
					c.Close() // waits for the roll-back
					for i, m := range ms {
						if mask&(1<<i) == 0 && m.Exists("orders:42") {
							t.Fatalf("mask %05b: node %d still holds the key after a failed attempt", mask, i)
						}
					}
					continue
				}
				for i, m := range ms { // the nodes after the quorum may still be answering
					if mask&(1<<i) == 0 {
						redistest.Eventually(t, fmt.Sprintf("mask %05b: node %d holds the token", mask, i), func() bool {
							got, _ := m.Get("orders:42")
							return got == l.Token()
						})
					}
				}
				c.Close()
			}
		})
	}
}

// steppingClock advances by step on every reading: each call looks slow.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (s *steppingClock) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(s.step)
	return s.now
}
func (s *steppingClock) NewTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }
func (s *steppingClock) AfterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, f)
}

func TestUntilIsStartPlusTTLMinusDrift(t *testing.T) {
	clk := &steppingClock{now: time.Unix(1000, 0), step: 10 * time.Millisecond}
	_, c := cluster(t, 3, redlock.WithClock(clk))
	l, err := c.TryLock(context.Background(), "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The start is the first reading (1000s + 10ms); drift = 10s*0.01 + 2ms.
	want := time.Unix(1000, 0).Add(10*time.Millisecond + 10*time.Second - clock.Drift(10*time.Second, 0.01))
	if !l.Until().Equal(want) {
		t.Fatalf("Until() = %v, want %v", l.Until(), want)
	}
}

// An acquisition that took longer than the validity fails and is rolled back, though a quorum
// said yes.
func TestValidityUsedUpIsNotAcquired(t *testing.T) {
	clk := &steppingClock{now: time.Unix(1000, 0), step: time.Second}
	ms, c := cluster(t, 3, redlock.WithClock(clk))
	_, err := c.TryLock(context.Background(), "k", time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	c.Close()
	for i, m := range ms {
		if m.Exists("k") {
			t.Errorf("node %d kept the key of an attempt past its validity", i)
		}
	}
}

func TestExtend(t *testing.T) {
	ms, c := cluster(t, 5)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms { // the SETs after the quorum must land before the PEXPIREs
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists("k") })
	}
	before := l.Until()
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !l.Until().After(before) {
		t.Fatalf("Until did not move: %v then %v", before, l.Until())
	}
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d ttl 5s", i), func() bool { return m.TTL("k") == 5*time.Second })
	}
	// On a minority only: the lock is lost.
	for _, m := range ms[:3] {
		m.Del("k")
	}
	until := l.Until()
	if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend on a minority: %v, want ErrNotHeld", err)
	}
	if !l.Until().Equal(until) {
		t.Fatal("a failed Extend moved Until")
	}
	// After expiry and a new owner, Extend and Unlock fail and leave the new owner alone.
	for _, m := range ms {
		m.FastForward(6 * time.Second)
	}
	c2, err := redlock.New(redistest.MiniClients(t, ms))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	l2, err := c2.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d holds the new key", i), func() bool { v, _ := m.Get("k"); return v == l2.Token() })
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend after expiry: %v, want ErrNotHeld", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock after expiry: %v, want ErrNotHeld", err)
	}
	c.Close()
	for i, m := range ms {
		if got, _ := m.Get("k"); got != l2.Token() || m.TTL("k") != 10*time.Second {
			t.Fatalf("node %d: the new owner's key was touched", i)
		}
	}
}

// Fencing tokens strictly increase, and the last is the counter on a quorum. The nodes'
// clocks stand still, so that the counter, not the clocks, must make each token the larger.
func TestFenceIncreasesAndIsStored(t *testing.T) {
	ms, c := cluster(t, 5, redlock.WithFencing())
	ctx := context.Background()
	still := time.Now()
	for _, m := range ms {
		m.SetTime(still)
	}
	var last uint64
	for range 20 {
		l, err := c.Lock(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() <= last {
			t.Fatalf("Fence() = %d after %d", l.Fence(), last)
		}
		last = l.Fence()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	held := 0
	for _, m := range ms {
		if v, _ := m.Get(companion("fence", "k")); v == strconv.FormatUint(last, 10) {
			held++
		}
	}
	if held < 3 {
		t.Fatalf("the last token %d is the counter on %d nodes, want a quorum", last, held)
	}
}

// Extend and Unlock compare the token on each node: they neither extend nor delete another
// owner's key, and where it stands on a majority of nodes they fail.
func TestExtendAndUnlockLeaveAnotherOwnersKey(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	for _, end := range []string{"Extend", "Unlock"} {
		key := "k-" + end
		l, err := c.TryLock(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Another owner's key replaces it on two nodes (a SET of the attempt still on its way
		// there finds the key taken).
		for _, m := range ms[:2] {
			m.Set(key, "another")
			m.SetTTL(key, time.Minute)
		}
		if end == "Extend" {
			err = l.Extend(ctx, 5*time.Second)
		} else {
			err = l.Unlock(ctx)
		}
		if err == nil { // ErrNotHeld, or ErrNoQuorum while a late acquisition reply is read
			t.Fatalf("%s succeeded with another owner's key on 2 of 3 nodes", end)
		}
		for i, m := range ms[:2] {
			if got, _ := m.Get(key); got != "another" || m.TTL(key) != time.Minute {
				t.Fatalf("%s touched another owner's key on node %d: %q, ttl %v", end, i, got, m.TTL(key))
			}
		}
	}
}

// The fencing token follows the median clock, not the lowest or the highest: on three nodes, one
// with its clock an hour behind or ahead and one losing its data between two acquisitions,
// tokens still increase (fence_clock_test.go plays every size up to seven nodes).
func TestFenceFollowsTheMedianClock(t *testing.T) {
	t.Parallel()
	fenceNeverGoesBack(t, 3)
}

// When the lock is taken from a majority under Do, fn's context is cancelled with cause
// ErrNotHeld and Do says so, with fn's own error.
func TestDoCancelsFnWhenTheLockIsLost(t *testing.T) {
	ms, c := cluster(t, 5)
	fnErr := errors.New("stopped")
	var cause error
	err := c.Do(context.Background(), "job", 150*time.Millisecond, func(ctx context.Context) error {
		for i, m := range ms {
			redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists("job") })
		}
		for _, m := range ms[:3] {
			m.Set("job", "intruder")
		}
		redistest.Receive(t, "fn's context done once the next extension finds the key taken", ctx.Done())
		cause = context.Cause(ctx)
		return fnErr
	})
	if !errors.Is(err, redlock.ErrNotHeld) || !errors.Is(err, fnErr) {
		t.Fatalf("Do = %v, want ErrNotHeld and fn's error", err)
	}
	if !errors.Is(cause, redlock.ErrNotHeld) {
		t.Fatalf("context.Cause = %v, want ErrNotHeld", cause)
	}
	for i, m := range ms[:3] {
		if got, _ := m.Get("job"); got != "intruder" {
			t.Fatalf("node %d: the intruder's key became %q", i, got)
		}
	}
}

// Close releases the locks its Client holds, so that nothing stays on the nodes for a ttl; an
// Unlock after Close says so.
func TestCloseReleasesWhatTheClientHolds(t *testing.T) {
	ms := redistest.Minis(t, 3)
	c, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for i, m := range ms {
		if m.Exists("k") {
			t.Errorf("node %d still holds the key after Close", i)
		}
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Unlock after Close = %v; want ErrClosed", err)
	}
}

// queueing starts three miniredis nodes, a first Client holding "k" on all of them, and a
// function making more Clients, which wait only for announcements (the fallback timer is an
// hour). queued waits until n waiters are in the key's queue on every node.
func queueing(t *testing.T) (ms []*miniredis.Miniredis, held *redlock.Lock, client func() *redlock.Client, queued func(n int)) {
	ms = redistest.Minis(t, 3)
	client = func() *redlock.Client {
		c, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second),
			redlock.WithRetryDelay(time.Hour, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	held, err := client().Lock(context.Background(), "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms { // else a waiter may win a node whose SET is still in flight
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists("k") })
	}
	queued = func(n int) {
		redistest.Eventually(t, fmt.Sprintf("%d waiters queued on every node", n), func() bool {
			for _, m := range ms {
				if got, _ := m.ZMembers(companion("queue", "k")); len(got) != n {
					return false
				}
			}
			return true
		})
	}
	t.Cleanup(func() {
		for i, m := range ms { // the last releases may still be in flight
			redistest.Eventually(t, fmt.Sprintf("node %d: the line is empty", i), func() bool {
				got, _ := m.ZMembers(companion("queue", "k"))
				return t.Failed() || len(got) == 0
			})
		}
	})
	return ms, held, client, queued
}

// Waiters of separate Clients (processes) queue on the nodes: a release wakes only the one that
// began waiting first, so they are served in that order, and neither polls (the fallback timer
// is an hour). The queue is empty once both are done.
func TestReleaseWakesTheWaiterFirstInQueue(t *testing.T) {
	_, held, client, queued := queueing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	order := make(chan string, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"first", "second"} {
		c := client()
		wg.Go(func() {
			l, err := c.Lock(ctx, "k", time.Minute)
			if err != nil {
				t.Errorf("the %s waiter, woken only by an announced release: %v", name, err)
				return
			}
			order <- name
			work(20 * time.Millisecond) // the other one must not get in meanwhile
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
		queued(i + 1)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	if a, b := <-order, <-order; a != "first" || b != "second" {
		t.Fatalf("served %q then %q, want first then second", a, b)
	}
}

// A waiter with another ahead of it in line holds its place from its first attempt for as long
// as its pause before the next (four of its Client's leases), while the waiter at the front
// pauses one lease: else a waiter far back would lose its place halfway through its pause, and
// a release reaching it then would pass it over. A waiter's place lasts while its Client hears
// the node, so what lasts is the line itself (the servers' time does not move here, so that
// the TTLs are read as set).
func TestWaiterBehindHoldsItsPlaceUntilItsNextAttempt(t *testing.T) {
	ms, held, client, queued := queueing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for n := range 2 {
		c := client()
		wg.Go(func() {
			l, err := c.Lock(ctx, "k", time.Minute)
			if err != nil {
				t.Errorf("waiter %d: %v", n, err)
				return
			}
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
		queued(n + 1)
	}
	const lease = time.Hour + 3*2*time.Second // queueing's Clients': the retry delay and three node timeouts
	for i, m := range ms {
		if d := m.TTL(companion("queue", "k")); d < 4*lease {
			t.Errorf("node %d: the line lasts %v, want the pause of the waiter behind (%v) at least", i, d, 4*lease)
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// Four candidates take turns leading: one leader at a time, terms strictly increasing, and each
// Resign hands the leadership on at once (the candidates' timers are an hour).
func TestElectionOneLeaderAtATimeAndResignHandsOn(t *testing.T) {
	ms := redistest.Minis(t, 3)
	cs := candidates(t, ms, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var leading, overlaps atomic.Int32
	var mu sync.Mutex
	var terms []uint64
	var wg sync.WaitGroup
	for i, c := range cs {
		e := election(t, c, 10*time.Second)
		wg.Go(func() {
			for range 5 {
				term, err := e.Campaign(ctx, string(rune('a'+i)))
				if err != nil {
					t.Error(err)
					return
				}
				if leading.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				terms = append(terms, term.Term())
				mu.Unlock()
				work(time.Millisecond)
				leading.Add(-1)
				if err := term.Resign(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d times two leaders at once", overlaps.Load())
	}
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Fatalf("term %d after %d: terms must strictly increase", terms[i], terms[i-1])
		}
	}
}

// Each term is larger than the last even when the nodes' clocks stand an hour behind: the
// counter, not the clocks, makes it so.
func TestTermsIncreaseWithTheClocksBehind(t *testing.T) {
	ms := redistest.Minis(t, 3)
	behind := time.Now().Add(-time.Hour)
	for _, m := range ms {
		m.SetTime(behind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := election(t, candidates(t, ms, 1)[0], 10*time.Second)
	var last uint64
	for range 3 {
		term, err := e.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if term.Term() <= last {
			t.Fatalf("term %d after %d: terms must strictly increase", term.Term(), last)
		}
		last = term.Term()
		if err := term.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An orphaned lock is left on the nodes to expire: neither the Client's keeper nor Close
// touches it, and Unlock says it is not held.
func TestOrphanLeavesTheLockToExpire(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	l, err := c.Lock(ctx, "tick", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.KeepAlive(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Orphan(ctx); err != nil {
		t.Fatalf("Orphan: %v", err)
	}
	if !closed(l.Lost()) || l.Err() != nil {
		t.Fatalf("after Orphan: Lost closed %v, Err %v", closed(l.Lost()), l.Err())
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock after Orphan: %v", err)
	}
	c.Close()
	held := 0
	for _, m := range ms {
		if v, _ := m.Get("tick"); v == l.Token() {
			held++
		}
	}
	if held < 2 {
		t.Fatalf("after Close, %d nodes hold the orphaned lock; its key must be left to expire", held)
	}
}

// A context that carries a held lock re-enters it only for the keys the lock holds: a call
// for another key contends as any other, refused while another Client holds that key, and
// acquiring it with a token of its own once it is free.
func TestReenterOnlyTheKeysItHolds(t *testing.T) {
	ms, c := cluster(t, 3)
	other := clientOn(t, ms)
	ctx := context.Background()
	a, err := c.Lock(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unlock(ctx)
	held := a.Context(ctx)
	b, err := other.Lock(ctx, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if in, err := c.TryLock(held, "b", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another key, held by another Client, with the holder's context: %v (token %q)", err, in.Token())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := c.TryLock(held, "b", time.Minute)
	if err != nil || in.Token() == a.Token() {
		t.Fatalf("another key, free, with the holder's context: %v, token %q (the holder's %q)", err, in.Token(), a.Token())
	}
	in.Unlock(ctx)
}
