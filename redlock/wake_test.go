package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/redistest/delayproxy"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A release wakes the first waiter in line only while that waiter is still there: one whose
// Client closed, or that gave up, left the line. Either way the next waiter gets the key at
// once, not by its timer (an hour).
func TestRealServersReleaseSkipsWaitersThatAreGone(t *testing.T) {
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	nodes := redistest.Clients(t, addrs...)
	ctx := context.Background()
	newClient := func() *redlock.Client {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithRetryDelay(time.Hour, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// queued waits until n waiters are in key's queue on every node.
	queued := func(t *testing.T, key string, n int64) {
		t.Helper()
		redistest.Eventually(t, fmt.Sprintf("%d waiters queued for %q on every node", n, key), func() bool {
			for _, node := range nodes {
				if node.ZCard(ctx, companion("queue", key)).Val() != n {
					return false
				}
			}
			return true
		})
	}

	for _, tc := range []struct {
		name string
		// leave makes the first waiter go, given its Client and the cancel of its Lock call.
		leave func(c *redlock.Client, cancel context.CancelFunc)
	}{
		{"its Client closed", func(c *redlock.Client, _ context.CancelFunc) { c.Close() }},
		{"it gave up", func(_ *redlock.Client, cancel context.CancelFunc) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "wake-" + strings.ReplaceAll(tc.name, " ", "-")
			held, err := newClient().Lock(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Lock returned at a quorum: let the last node's SET land, so that the waiters
			// find the key held everywhere.
			for i, node := range nodes {
				redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return node.Get(ctx, key).Val() == held.Token() })
			}
			first, second := newClient(), newClient()
			firstCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			firstDone := make(chan error, 1)
			go func() {
				_, err := first.Lock(firstCtx, key, time.Minute)
				firstDone <- err
			}()
			queued(t, key, 1)
			type result struct {
				l   *redlock.Lock
				err error
			}
			secondDone := make(chan result, 1)
			go func() {
				l, err := second.Lock(ctx, key, 10*time.Second)
				secondDone <- result{l, err}
			}()
			queued(t, key, 2)
			tc.leave(first, cancel)
			if err := <-firstDone; err == nil {
				t.Fatal("the first waiter acquired the lock while it was held")
			}
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-secondDone:
				if r.err != nil {
					t.Fatal(r.err)
				}
				holding := 0
				for _, node := range nodes {
					if v, err := node.Get(ctx, key).Result(); err == nil && v == r.l.Token() {
						holding++
					}
				}
				if holding < 2 {
					t.Fatalf("%d nodes hold the second waiter's token, not a quorum", holding)
				}
				if err := r.l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the second waiter did not get the key")
			}
			// Unlock returned at a quorum; the last node's release follows.
			for i, node := range nodes {
				redistest.Eventually(t, fmt.Sprintf("node %d released the key after the last Unlock", i), func() bool {
					n, err := node.Exists(ctx, key).Result()
					return err == nil && n == 0
				})
			}
		})
	}
}

// A waiter woken by a release holds a lock like any other: a full validity from its own
// attempt, extended, resumed by its token from another Client, and excluding TryLock until it
// is released.
func TestRealServersWokenWaiterHoldsAFullLock(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	nodes := redistest.Clients(t, addrs...)
	ctx := context.Background()
	var cs []*redlock.Client
	for range 3 {
		// A generous node timeout: the test is about the waiter's validity, and under -race on a
		// busy machine the default 100 ms can cost the release its quorum.
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithRetryDelay(time.Hour, time.Hour), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	held, err := cs[0].Lock(ctx, "baton", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Lock returned at a quorum; the waiter below must find the key on the last node too, or
	// it would take that node, out of line, on every attempt.
	redistest.Eventually(t, "the holder's key is on every node", func() bool {
		for _, node := range nodes {
			if node.Get(ctx, "baton").Val() != held.Token() {
				return false
			}
		}
		return true
	})
	got := lockInLine(t, ctx, cs[1], nodes)
	elapse(time.Second) // a waiter that polled would have tried by now
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		return
	}
	if left := time.Until(l.Until()); left < 9*time.Second || left > 10*time.Second {
		t.Fatalf("woken with %v of validity left", left)
	}
	if err := l.Extend(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[2].TryLock(ctx, "baton", time.Second); err == nil {
		t.Fatal("TryLock took a held lock")
	}
	r, err := cs[2].Resume(ctx, "baton", l.Token(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l2, err := cs[2].TryLock(ctx, "baton", time.Second); err != nil {
		t.Fatal(err)
	} else {
		l2.Unlock(ctx)
	}
}

// lockInLine starts c's Lock of "baton" (ttl 10 s) in a goroutine, which sends the Lock (nil
// after an error) on the channel returned, and returns once the Lock failed its first attempt
// and stands alone in line on every node.
func lockInLine(t *testing.T, ctx context.Context, c *redlock.Client, nodes []redis.UniversalClient) <-chan *redlock.Lock {
	t.Helper()
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "baton", 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	redistest.Eventually(t, "the waiter is in line on every node", func() bool {
		for _, node := range nodes {
			if node.ZCard(ctx, companion("queue", "baton")).Val() != 1 {
				return false
			}
		}
		return true
	})
	return got
}

// A waiter that wins its lock where one node still refused it (the release had not reached that
// node yet) leaves that node's line: the release that lands there later lets the key go, rather
// than hand it to the winner, whose place would hold it there as long as it lasts (an hour
// here) unless the lock's own Unlock passed it on, which a lock resumed under its token by
// another Client never does.
func TestRealServersWaiterThatWonLeavesTheLineWhereItWasRefused(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	nodes := redistest.Clients(t, addrs...)
	far, err := delayproxy.StartDelay(addrs[0], 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(far.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newClient := func(addrs ...string) *redlock.Client {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithRetryDelay(time.Hour, time.Hour), redlock.WithNodeTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder := newClient(far.Addr(), addrs[1], addrs[2]) // its calls reach node 0 300 ms late
	waiter, other := newClient(addrs...), newClient(addrs...)
	held, err := holder.Lock(ctx, "baton", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the holder's key is on every node", func() bool {
		return nodes[0].Get(ctx, "baton").Val() == held.Token()
	})
	got := lockInLine(t, ctx, waiter, nodes)
	if err := held.Unlock(ctx); err != nil { // nodes 1 and 2 release it at once, node 0 later
		t.Fatal(err)
	}
	l := redistest.Receive(t, "the waiter's Lock", got)
	if l == nil {
		return
	}
	if v := nodes[0].Get(ctx, "baton").Val(); v != held.Token() {
		t.Fatalf("node 0 holds %q when the waiter won: want the holder's token, whose release is on its way", v)
	}
	r, err := other.Resume(ctx, "baton", l.Token(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "node 0 lets the key go once the holder's release lands", func() bool {
		return nodes[0].Exists(ctx, "baton").Val() == 0
	})
	if l2, err := other.TryLock(ctx, "baton", time.Second); err != nil {
		t.Fatal(err)
	} else if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A holder that crashed announces nothing: the first waiter in line tries again when the key
// expires on a quorum of nodes, as their refusals said, not a retry delay (an hour) later.
func TestRealServersFirstWaiterTakesAnExpiredKeyAtOnce(t *testing.T) {
	t.Parallel()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newClient := func() (*redlock.Client, func()) {
		nodes := redistest.Clients(t, addrs...)
		// A generous node timeout: a first call on cold connections, under -race on a busy
		// machine, can take longer than the default 100 ms, and the next try is an hour away.
		c, err := redlock.New(nodes, redlock.WithRetryDelay(time.Hour, time.Hour), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		crash := func() { // its connections close; nothing is released
			for _, n := range nodes {
				n.Close()
			}
		}
		return c, crash
	}
	for _, tc := range []struct {
		kind string
		// take acquires key on c, waiting, and returns the end of its validity.
		take func(c *redlock.Client, key string) (time.Time, error)
	}{
		{"lock", func(c *redlock.Client, key string) (time.Time, error) {
			l, err := c.Lock(ctx, key, time.Second)
			if err != nil {
				return time.Time{}, err
			}
			return l.Until(), nil
		}},
		{"election", func(c *redlock.Client, key string) (time.Time, error) {
			e, err := c.Election(key, time.Second)
			if err != nil {
				return time.Time{}, err
			}
			term, err := e.Campaign(ctx, "candidate")
			if err != nil {
				return time.Time{}, err
			}
			return term.Until(), nil
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			holder, crash := newClient()
			waiter, _ := newClient()
			until, err := tc.take(holder, "expired")
			if err != nil {
				t.Fatal(err)
			}
			crash()
			if _, err := tc.take(waiter, "expired"); err != nil {
				t.Fatal(err)
			}
			if late := time.Since(until); late > 5*time.Second {
				t.Fatalf("taken %v after the holder's validity ended: the waiter waited for its timer", late)
			}
		})
	}
}

// A TryLock that split the vote (it won a node, but no quorum) makes the Client's next Lock of
// the key wait in line from its first attempt: it does not barge again into a split.
func TestSplitVoteMakesTheNextLockWaitInLine(t *testing.T) {
	var events []string
	var mu sync.Mutex
	note := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	rolledBack := make(chan struct{}, 1)
	ms, c := cluster(t, 3, redlock.WithObserver(locktrace.Observer{
		Round:   func(context.Context, locktrace.Round) { note("round") },
		Waiting: func(context.Context, locktrace.Call) { note("waiting") },
		NodeReply: func(_ context.Context, r locktrace.NodeReply) {
			if r.Node == 2 && r.Op == locktrace.NodeRelease {
				select {
				case rolledBack <- struct{}{}:
				default:
				}
			}
		},
	}))
	ms[0].Set("k", "x")
	ms[1].Set("k", "y") // two others hold a node each: this Client can win node 2 only
	ctx := context.Background()
	if _, err := c.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock = %v, want ErrNotAcquired", err)
	}
	// Node 2's yes may come after the decision: its roll-back shows it was heard.
	select {
	case <-rolledBack:
	case <-time.After(10 * time.Second):
		t.Fatal("node 2 not rolled back after 10s")
	}
	mu.Lock()
	events = nil
	mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	c.Lock(short, "k", time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 || events[0] != "waiting" {
		t.Fatalf("the Lock after a split vote: events %v, want it waiting before its first round", events)
	}
}

// A waiter with another ahead of it in line does not try again when a key handed to a waiter
// before them both expires: the one first in line does, and hands the key on in its turn. Here
// the key is handed to a waiter whose call never comes back, while a live waiter waits behind
// it, and a third begins waiting: its Lock takes one attempt as if nobody waited (its Client
// has not waited for the key lately), one to take its place and one to take the key it is
// handed, not another at that handed key's expiry (a third of a second later).
func TestRealServersWaiterBehindWaitsForItsTurn(t *testing.T) {
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	nodes := redistest.Clients(t, addrs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var attempts sync.Map // the rounds of a Client's Locks, by its name
	newClient := func(name string) *redlock.Client {
		var n atomic.Int32
		attempts.Store(name, &n)
		type lockCall struct{}
		obs := locktrace.Observer{
			Begin: func(ctx context.Context, call locktrace.Call) context.Context {
				return context.WithValue(ctx, lockCall{}, call.Op == locktrace.OpLock)
			},
			Round: func(ctx context.Context, r locktrace.Round) {
				if ctx.Value(lockCall{}) == true {
					n.Add(1)
				}
			},
		}
		// A lease of 310 ms: the retry delay and three node timeouts.
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithRetryDelay(10*time.Millisecond, 10*time.Millisecond),
			redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	const ghost = "ghost.1" // a waiter whose Client hears but never comes (paused), first in line
	onEvery := func(what string, cond func(n redis.UniversalClient) bool) {
		t.Helper()
		redistest.Eventually(t, what+" on every node", func() bool {
			for _, n := range nodes {
				if !cond(n) {
					return false
				}
			}
			return true
		})
	}
	held, err := newClient("holder").Lock(ctx, "turn", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onEvery("the key held", func(n redis.UniversalClient) bool { return n.Exists(ctx, "turn").Val() == 1 })
	hearAs(t, nodes, "ghost")
	for _, n := range nodes {
		n.ZAdd(ctx, companion("queue", "turn"), redis.Z{Score: 1, Member: ghost})
	}
	served := make(chan string, 2)
	take := func(c *redlock.Client, name string) {
		l, err := c.Lock(ctx, "turn", 10*time.Second)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		served <- name
		if err := l.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	second := newClient("second")
	wg.Go(func() { take(second, "second") })
	onEvery("two waiters in line", func(n redis.UniversalClient) bool { return n.ZCard(ctx, companion("queue", "turn")).Val() == 2 })
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	onEvery("the key handed to the gone waiter", func(n redis.UniversalClient) bool { return n.Get(ctx, "turn").Val() == ghost })
	take(newClient("third"), "third")
	wg.Wait()
	close(served)
	if a, b := <-served, <-served; a != "second" || b != "third" {
		t.Fatalf("served %q then %q, want second then third", a, b)
	}
	n, _ := attempts.Load("third")
	if got := n.(*atomic.Int32).Load(); got != 3 {
		t.Errorf("the third waiter's Lock made %d attempts, want 3: one as if nobody waited, one that took its place, one that took the key", got)
	}
}
