package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// rounds counts the rounds of node calls a Client decided: an attempt's, an Extend's, an
// Unlock's, fencing's. The Observer is told of each within the call that made it.
type rounds struct{ n atomic.Int64 }

func (r *rounds) option() redlock.Option {
	return redlock.WithObserver(locktrace.Observer{
		Round: func(context.Context, locktrace.Round) { r.n.Add(1) },
	})
}

// clientOn returns another Client over the nodes ms; t.Cleanup closes it.
func clientOn(t *testing.T, ms []*miniredis.Miniredis, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}, opts...)
	c, err := redlock.New(redistest.MiniClients(t, ms), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// within returns a context that ends after d: every wait of these tests has a deadline.
func within(t *testing.T, parent context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(parent, d)
	t.Cleanup(cancel)
	return ctx
}

// Do three deep through the context Do gives fn, by many holders at once, each on a key of its
// own: no deadlock; another Client is refused at every depth and after the inner Do returned,
// and takes the key at once after the outermost Do returns, woken by its release (the ttl, a
// minute, is far past the test's deadline).
func TestReenterNestedDoThreeDeep(t *testing.T) {
	ms, a := cluster(t, 3)
	b := clientOn(t, ms)
	refused := func(key, where string) {
		if _, err := b.TryLock(context.Background(), key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("%s: another Client's TryLock %s: %v", key, where, err)
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		key := fmt.Sprintf("nested:%d", i)
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			depth := 0
			err := a.Do(within(t, context.Background(), 10*time.Second), key, time.Minute, func(ctx context.Context) error {
				err := a.Do(ctx, key, time.Second, func(ctx context.Context) error {
					return a.Do(ctx, key, time.Second, func(ctx context.Context) error {
						depth = 3
						refused(key, "three deep")
						return nil
					})
				})
				refused(key, "after the inner Do returned")
				return err
			})
			if err != nil || depth != 3 {
				t.Errorf("%s: Do three deep: %v (depth %d)", key, err, depth)
			}
		})
		wg.Go(func() {
			<-done
			l, err := b.Lock(within(t, context.Background(), 10*time.Second), key, time.Minute)
			if err != nil {
				t.Errorf("%s: another Client after the outermost Do returned: %v", key, err)
				return
			}
			l.Unlock(context.Background())
		})
	}
	wg.Wait()
}

// Goroutines given the holder's context re-enter, many at once; goroutines with a fresh context
// wait like any contender and take the lock one at a time once the holder releases it; another
// Client's call with the holder's context, and a call for another key, do not re-enter.
func TestReenterFollowsTheContextNotTheGoroutine(t *testing.T) {
	var waiting atomic.Int32
	ms, a := cluster(t, 3, redlock.WithObserver(locktrace.Observer{
		Waiting: func(context.Context, locktrace.Call) { waiting.Add(1) },
	}))
	b := clientOn(t, ms)
	ctx := context.Background()
	outer, err := a.Lock(ctx, "orders", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	holder := outer.Context(ctx)
	var inside, fresh, overlaps atomic.Int32
	inside.Store(1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			in, err := a.Lock(within(t, holder, 5*time.Second), "orders", time.Second)
			if err != nil {
				t.Errorf("a goroutine given the holder's context: %v", err)
				return
			}
			if in.Token() != outer.Token() || !in.Until().Equal(outer.Until()) || in.Key() != "orders" || closed(in.Lost()) {
				t.Errorf("the inner handle is not the lock's: token %q, until %v", in.Token(), in.Until())
			}
			if err := in.Unlock(ctx); err != nil {
				t.Errorf("inner Unlock: %v", err)
			}
			if err := in.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("inner Unlock again: %v, want ErrNotHeld", err)
			}
		})
	}
	waiters := sync.WaitGroup{}
	for range 4 {
		waiters.Go(func() {
			l, err := a.Lock(within(t, ctx, 10*time.Second), "orders", time.Second)
			if err != nil {
				t.Errorf("a goroutine with a fresh context: %v", err)
				return
			}
			if inside.Load() != 0 || fresh.Add(1) != 1 {
				overlaps.Add(1)
			}
			work(time.Millisecond)
			fresh.Add(-1)
			l.Unlock(ctx)
		})
	}
	wg.Wait()
	redistest.Eventually(t, "the 4 goroutines with a fresh context wait", func() bool { return waiting.Load() == 4 })
	if _, err := b.TryLock(holder, "orders", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("another Client with the holder's context: %v, want ErrNotAcquired", err)
	}
	other, err := a.TryLock(holder, "invoices", time.Second)
	if err != nil || other.Token() == outer.Token() {
		t.Fatalf("another key with the holder's context: %v", err)
	}
	other.Unlock(ctx)
	inside.Store(0)
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	waiters.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d waiters held the lock beside its holder or one another", n)
	}
	// The lock has ended: its context re-enters nothing any more.
	again, err := a.Lock(within(t, holder, 5*time.Second), "orders", time.Second)
	if err != nil || again.Token() == outer.Token() {
		t.Fatalf("TryLock with an ended lock's context: %v", err)
	}
	again.Unlock(ctx)
}

// A re-entry whose ttl fits in the lock's validity sends nothing; one whose ttl does not fit
// extends the lock first, in one round; the handle's Until, Token and Fence are the lock's.
func TestReenterSendsNothingWhenTheTTLFits(t *testing.T) {
	var sent rounds
	_, c := cluster(t, 3, redlock.WithFencing(), sent.option())
	ctx := context.Background()
	outer, err := c.Lock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held := outer.Context(ctx)
	before := sent.n.Load()
	var handles []*redlock.Lock
	for _, acquire := range []func(context.Context, string, time.Duration) (*redlock.Lock, error){c.Lock, c.TryLock} {
		in, err := acquire(held, "k", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, in)
	}
	err = c.Do(held, "k", 5*time.Second, func(ctx context.Context) error {
		in, err := c.TryLock(ctx, "k", time.Second) // Do's fn context carries the lock
		handles = append(handles, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range handles {
		if in.Fence() == 0 || in.Fence() != outer.Fence() || in.Token() != outer.Token() || !in.Until().Equal(outer.Until()) {
			t.Fatalf("handle: fence %d token %q until %v; the lock's: %d %q %v",
				in.Fence(), in.Token(), in.Until(), outer.Fence(), outer.Token(), outer.Until())
		}
		if err := in.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("re-entries whose ttl fits made %d rounds of node calls", n)
	}
	until := outer.Until()
	in, err := c.Lock(held, "k", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := sent.n.Load() - before; n != 1 {
		t.Fatalf("a re-entry for a longer ttl made %d rounds of node calls, want 1 (an extension)", n)
	}
	if grew := outer.Until().Sub(until); grew < 19*time.Second || !in.Until().Equal(outer.Until()) {
		t.Fatalf("the lock's validity grew by %v, want about 20s", grew)
	}
	in.Unlock(ctx)
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// An inner handle's Unlock counts down once: the second returns ErrNotHeld, and the lock stays
// held. Its Extend extends the lock, its Lost closes at its own Unlock (the lock's stays open),
// and Orphan ends it without touching the lock either.
func TestReenterInnerUnlockCountsDown(t *testing.T) {
	ms, c := cluster(t, 3)
	b := clientOn(t, ms)
	ctx := context.Background()
	outer, err := c.Lock(ctx, "k", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held := outer.Context(ctx)
	in, err := c.TryLock(held, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	until := outer.Until()
	if err := in.Extend(ctx, 20*time.Second); err != nil || !outer.Until().After(until.Add(14*time.Second)) {
		t.Fatalf("inner Extend: %v; the lock's Until moved from %v to %v", err, until, outer.Until())
	}
	if err := in.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Receive(t, "the inner handle's Lost after its Unlock", in.Lost())
	if err := in.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("inner Unlock twice: %v, want ErrNotHeld", err)
	}
	if err := in.Extend(ctx, time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("inner Extend after its Unlock: %v, want ErrNotHeld", err)
	}
	orphan, err := c.Lock(held, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := orphan.Orphan(ctx); err != nil {
		t.Fatalf("a handle's Orphan: %v", err)
	}
	if _, err := b.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) || closed(outer.Lost()) || outer.Err() != nil {
		t.Fatalf("after the inner handles ended: another Client's TryLock %v, the lock's Err %v", err, outer.Err())
	}
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Releasing the lock while inner handles are open releases it: their Lost closes, their Err
// and Unlock say it ended (ErrNotHeld), and an inner Do's fn sees its context cancelled with
// that cause. Close does the same, with ErrClosed.
func TestReenterOuterReleaseEndsInnerHandles(t *testing.T) {
	ms, c := cluster(t, 3)
	b := clientOn(t, ms)
	ctx := context.Background()
	outer, err := c.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held := outer.Context(ctx)
	in, err := c.Lock(held, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	running, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- c.Do(held, "k", time.Second, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return context.Cause(ctx)
		})
	}()
	redistest.Receive(t, "the inner Do's fn", running)
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Receive(t, "the inner handle's Lost after the lock's Unlock", in.Lost())
	if err := in.Err(); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("inner Err: %v, want ErrNotHeld", err)
	}
	if err := in.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("inner Unlock after the lock's: %v, want ErrNotHeld", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("inner Do: %v, want ErrNotHeld", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the inner Do's fn was not cancelled within 5s")
	}
	if l, err := b.TryLock(ctx, "k", time.Second); err != nil {
		t.Fatalf("the key after the lock's Unlock: %v", err)
	} else {
		l.Unlock(ctx)
	}

	outer, err = c.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	in, err = c.TryLock(outer.Context(ctx), "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	redistest.Receive(t, "the inner handle's Lost after Close", in.Lost())
	if err := in.Err(); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("inner Err after Close: %v, want ErrClosed", err)
	}
}

// A panic in an inner Do releases nothing that the outer holder still holds: the panic goes on
// to the outer holder, the lock stays held, and the outer Do releases it when it returns.
func TestReenterPanicInInnerDoReleasesNothing(t *testing.T) {
	ms, c := cluster(t, 3)
	b := clientOn(t, ms)
	ctx := context.Background()
	innerPanics := func(ctx context.Context) (recovered any) {
		defer func() { recovered = recover() }()
		c.Do(ctx, "k", time.Second, func(context.Context) error { panic("inner") })
		return nil
	}
	stillHeld := func(where string) {
		if _, err := b.TryLock(ctx, "k", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s: another Client's TryLock: %v", where, err)
		}
	}
	err := c.Do(ctx, "k", time.Minute, func(ctx context.Context) error {
		if r := innerPanics(ctx); r != "inner" {
			t.Errorf("recovered %v", r)
		}
		stillHeld("in an outer Do, after the inner Do panicked")
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Lock, not TryLock: the refused TryLocks' late SETs may hold a node until their
	// roll-backs land.
	l, err := b.Lock(within(t, ctx, 5*time.Second), "k", time.Second)
	if err != nil {
		t.Fatalf("after the outer Do returned: %v", err)
	}
	l.Unlock(ctx)

	outer, err := c.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r := innerPanics(outer.Context(ctx)); r != "inner" {
		t.Errorf("recovered %v", r)
	}
	stillHeld("under a Lock, after an inner Do panicked")
	if outer.Err() != nil || closed(outer.Lost()) {
		t.Fatalf("the lock ended: %v", outer.Err())
	}
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A re-entry whose ttl needs an extension that fails says why, and returns no handle.
func TestReenterFailsWhenTheExtensionFails(t *testing.T) {
	ms, c := cluster(t, 3)
	ctx := context.Background()
	outer, err := c.Lock(ctx, "k", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		m.Del("k") // the lock is gone from every node
	}
	in, err := c.Lock(outer.Context(ctx), "k", time.Minute)
	if in != nil || !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("re-entry for a longer ttl of a lock gone from the nodes: %v, %v", in, err)
	}
	redistest.Receive(t, "the lock's Lost once the extension found it gone", outer.Lost())
}

// offsetClock is the real clock moved by an offset that a test sets.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                                { return time.Now().Add(time.Duration(c.offset.Load())) }
func (*offsetClock) NewTimer(d time.Duration) *time.Timer            { return time.NewTimer(d) }
func (*offsetClock) AfterFunc(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

// A lock whose validity has passed is not re-entered, even while its keys are still on the
// nodes (their clocks have not moved): the call contends like any other, and is refused.
func TestReenterNotPastTheValidity(t *testing.T) {
	var clk offsetClock
	var sent rounds
	_, c := cluster(t, 3, redlock.WithClock(&clk), sent.option())
	ctx := context.Background()
	outer, err := c.Lock(ctx, "k", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clk.offset.Store(int64(time.Minute)) // past Until, on the Client's clock only
	before := sent.n.Load()
	in, err := c.TryLock(outer.Context(ctx), "k", time.Second)
	if in != nil || !errors.Is(err, redlock.ErrNotAcquired) || sent.n.Load()-before != 1 {
		t.Fatalf("TryLock with the context of a lock past its validity: %v, %v, after %d rounds; want ErrNotAcquired after one attempt",
			in, err, sent.n.Load()-before)
	}
	if err := outer.Err(); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("the lock's Err: %v, want ErrNotHeld", err)
	}
}
