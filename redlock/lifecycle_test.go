package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLostClosesWhenValidityPasses(t *testing.T) {
	_, c := cluster(t, 3)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 500*time.Millisecond) // an acquisition under load takes tens of ms
	if err != nil {
		t.Fatal(err)
	}
	lost := l.Lost()
	if closed(lost) {
		t.Fatal("Lost closed at once")
	}
	redistest.Receive(t, "Lost closed after the validity", lost)
	if time.Now().Before(l.Until()) {
		t.Fatalf("Lost closed before Until %v", l.Until())
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend after the validity: %v, want ErrNotHeld", err)
	}
}

func TestLostFollowsExtend(t *testing.T) {
	_, c := cluster(t, 3)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 80*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lost := l.Lost()
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	elapse(120 * time.Millisecond) // past the first validity
	if closed(lost) {
		t.Fatal("Lost closed at the old Until after a successful Extend")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(lost) {
		t.Fatal("Lost still open after Unlock")
	}
}

// An Extend that finds the key gone from a majority ends the lock now, not at Until.
func TestExtendFindingTheKeyGoneEndsTheLock(t *testing.T) {
	ms, c := cluster(t, 5)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return m.Exists("k") })
	}
	for _, m := range ms[:3] {
		m.Del("k")
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend: %v, want ErrNotHeld", err)
	}
	if !closed(l.Lost()) {
		t.Fatal("Lost still open after the key was found gone from a majority")
	}
}

// Do keeps the lock while fn runs well past the ttl, and releases it afterwards. The Client's
// clock and the nodes' move only when fn moves them (manualClock): each step leaves the lock
// less than a third of its ttl, so that the keeper extends it, and fn waits for that extension
// before it looks and steps again. On the real clock an extension had to land within a third of
// a 1 s ttl, a race with the machine: beside four busy loops, at a load of 13, the three
// miniredis calls of one took 240 to 600 ms, and the lock was lost.
func TestDoExtendsWhileFnRuns(t *testing.T) {
	t.Parallel()
	const ttl = time.Minute
	clk, extended, ms, c, ctx := manualCluster(t)
	ran := false
	err := c.Do(ctx, "job", ttl, func(ctx context.Context) error {
		for range 4 { // 3 minutes: several ttls
			if err := clk.awaitExtension(t, ttl, "the keeper extends the lock", extended); err != nil {
				return fmt.Errorf("the keeper's extension: %w", err)
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if _, err := c.TryLock(context.Background(), "job", ttl); !errors.Is(err, redlock.ErrNotAcquired) {
				return fmt.Errorf("the key was free while Do held it: %v", err)
			}
		}
		ran = true
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Do = %v (fn finished: %v)", err, ran)
	}
	c.Close()
	for i, m := range ms {
		if m.Exists("job") {
			t.Fatalf("node %d still holds the key after Do", i)
		}
	}
}

// A manualClock is a Client's clock that moves only when the test moves it, and with it the
// clocks of the nodes it follows (their TIME and their keys' ttls): a test of keep-alives then
// sees each extension happen before the validity ends, however long a busy machine takes to
// run it. Its timers fire when advance reaches them; one the Client stopped stays stopped.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []manualTimer
	nodes  []*miniredis.Miniredis
}

type manualTimer struct {
	at time.Time
	t  *time.Timer
}

// never is how long a manualClock's timer waits on the real clock: until advance fires it.
const never = 100 * 365 * 24 * time.Hour

func newManualClock() *manualClock { return &manualClock{now: time.Now()} }

// manualCluster returns 3 miniredis nodes and a Client over them on a manual clock that the
// nodes follow, the channel on which its extensions are seen (see watchExtends), and a context with a
// deadline: a call that retried would wait on the manual clock.
func manualCluster(t *testing.T) (*manualClock, <-chan error, []*miniredis.Miniredis, *redlock.Client, context.Context) {
	clk := newManualClock()
	extended, watch := watchExtends()
	ms, c := cluster(t, 3, redlock.WithClock(clk), watch)
	clk.follow(ms)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return clk, extended, ms, c, ctx
}

// follow sets the nodes' clocks to c's, and has advance move them on with it.
func (c *manualClock) follow(nodes []*miniredis.Miniredis) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = nodes
	for _, m := range nodes {
		m.SetTime(c.now)
	}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) *time.Timer {
	if d <= 0 {
		return time.NewTimer(0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.NewTimer(never)
	c.timers = append(c.timers, manualTimer{at: c.now.Add(d), t: t})
	return t
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) *time.Timer {
	if d <= 0 {
		return time.AfterFunc(0, f)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.AfterFunc(never, f)
	c.timers = append(c.timers, manualTimer{at: c.now.Add(d), t: t})
	return t
}

// advance moves c and the nodes it follows on by d, and fires the timers due by then.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, m := range c.nodes {
		m.SetTime(c.now)
		m.FastForward(d)
	}
	due := func(mt manualTimer) bool {
		if mt.at.After(c.now) {
			return false
		}
		if mt.t.Stop() { // not stopped by the Client: it fires now
			mt.t.Reset(0)
		}
		return true
	}
	c.timers = slices.DeleteFunc(c.timers, due)
}

// awaitExtension moves c on in steps of a twelfth of ttl until extended receives the next
// extension of a lock of ttl, the last one made now, and returns its error. It moves c at
// most three quarters of ttl, where the keeper extends, and waits on the real clock then: the
// keeper arms its timer for a time it read before (Now, then NewTimer), so that one jump of
// the clock while it arms it would pass that time by and leave the timer for the next jump.
func (c *manualClock) awaitExtension(t *testing.T, ttl time.Duration, what string, extended <-chan error) error {
	t.Helper()
	for moved := time.Duration(0); moved < ttl*3/4; moved += ttl / 12 {
		c.advance(ttl / 12)
		select {
		case err := <-extended:
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
	return redistest.Receive(t, what, extended)
}

// watchExtends returns a channel that receives the error (nil for success) of every Extend the
// Client makes, a keeper's included, and the Option that reports them.
func watchExtends() (<-chan error, redlock.Option) {
	ch := make(chan error, 64)
	return ch, redlock.WithObserver(locktrace.Observer{
		End: func(_ context.Context, call locktrace.Call, r locktrace.Return) {
			if call.Op == locktrace.OpExtend {
				select {
				case ch <- r.Err:
				default: // a test waits for fewer
				}
			}
		},
	})
}

func TestDoReturnsFnError(t *testing.T) {
	_, c := cluster(t, 3)
	boom := errors.New("boom")
	if err := c.Do(context.Background(), "job", time.Second, func(context.Context) error { return boom }); !errors.Is(err, boom) || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want boom alone", err)
	}
	if err := c.Do(context.Background(), "job", time.Second, nil); err == nil {
		t.Fatal("Do with a nil fn succeeded")
	}
}

// Eight clients, as eight processes would, hand one key around. The fallback timer is 10 s, so
// a hand-off that waited for it would show: every one must come from an announced release.
func TestRealServersHandOffByAnnouncement(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 5)
	addrs := redistest.Addrs(ss)
	const clients, rounds = 8, 25
	var mu sync.Mutex
	var longest time.Duration
	var wg sync.WaitGroup
	for range clients {
		c, err := redlock.New(redistest.Clients(t, addrs...),
			redlock.WithRetryDelay(10*time.Second, 10*time.Second),
			redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			for range rounds {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				l, err := c.Lock(ctx, "baton", 10*time.Second)
				cancel()
				if err != nil {
					t.Errorf("a Lock waited %v, no release woke it: %v", time.Since(start), err)
					return
				}
				mu.Lock()
				longest = max(longest, time.Since(start))
				mu.Unlock()
				work(time.Millisecond)
				if err := l.Unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("the longest of %d waits: %v", clients*rounds, longest)
	if longest >= 10*time.Second {
		t.Fatalf("a Lock waited %v: it was woken by its timer, not by a release", longest)
	}
}

// A majority stopped while Do runs: fn's context is cancelled while the keys still exist on the
// running nodes (before the validity ended there), and Do returns ErrNotHeld.
func TestRealServersDoLosesLockWhenMajorityStops(t *testing.T) {
	// Not parallel: its short node timeout is for a machine running one test at a time.
	ss := redistest.StartN(t, 5)
	nodes := redistest.Clients(t, redistest.Addrs(ss)...)
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(50*time.Millisecond), redlock.WithDriftFactor(0.2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var pttl time.Duration
	var cause error
	err = c.Do(context.Background(), "job", 600*time.Millisecond, func(ctx context.Context) error {
		for _, s := range ss[:3] {
			s.Pause(t)
		}
		redistest.Receive(t, "fn's context done once a majority of nodes stopped", ctx.Done())
		p, err := nodes[4].PTTL(context.Background(), "job").Result()
		if err != nil {
			t.Fatalf("PTTL of job on a running node: %v", err)
		}
		pttl = p
		cause = context.Cause(ctx)
		return nil
	})
	if !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Do = %v, want ErrNotHeld", err)
	}
	if !errors.Is(cause, redlock.ErrNotHeld) {
		t.Fatalf("context.Cause = %v, want ErrNotHeld", cause)
	}
	if pttl <= 0 {
		t.Fatalf("fn was cancelled after the key expired on a running node (pttl %v)", pttl)
	}
}

// A Client that waited for a key lately makes even its first attempt as a waiter, so that it
// does not cut ahead of waiters already queued: B, released and locking again at once, is served
// after C and E, which queued before it.
func TestLockingAgainQueuesBehindWaiters(t *testing.T) {
	_, held, client, queued := queueing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var order []string
	hold := func(c *redlock.Client, name string) error {
		l, err := c.Lock(ctx, "k", time.Minute)
		if err != nil {
			return err
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		work(20 * time.Millisecond)
		return l.Unlock(ctx)
	}
	var wg sync.WaitGroup
	for i, name := range []string{"B", "C", "E"} {
		c := client()
		wg.Go(func() {
			if err := hold(c, name); err != nil {
				t.Error(err)
			}
			if name == "B" {
				if err := hold(c, "B again"); err != nil {
					t.Error(err)
				}
			}
		})
		queued(i + 1)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if want := []string{"B", "C", "E", "B again"}; !slices.Equal(order, want) {
		t.Fatalf("served %q, want %q", order, want)
	}
}
