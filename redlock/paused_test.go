package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// A pausedClock is the clock of a process that was stopped and has just continued: Now has
// moved on by the pause at once, while timers still wait in real time, as a stopped process's
// timers run only some time after it continues.
// Timers longer than four seconds are told on long, if someone is listening.
type pausedClock struct {
	paused atomic.Int64
	long   chan time.Duration
}

func newPausedClock() *pausedClock { return &pausedClock{long: make(chan time.Duration, 1)} }

func (c *pausedClock) Now() time.Time { return time.Now().Add(time.Duration(c.paused.Load())) }

func (c *pausedClock) NewTimer(d time.Duration) *time.Timer {
	if d > 4*time.Second {
		select {
		case c.long <- d:
		default:
		}
	}
	return time.NewTimer(d)
}

// kept waits until a timer longer than four seconds was made: the one a keep-alive of a 10 s
// ttl sleeps on until its next extension (the node timeout is shorter).
func (c *pausedClock) kept(t *testing.T) {
	t.Helper()
	select {
	case <-c.long:
	case <-time.After(10 * time.Second):
		t.Fatal("no keep-alive timer after 10s")
	}
}

func (c *pausedClock) AfterFunc(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

// pause moves the clock on by d, as a process stopped for d finds it when it continues.
func (c *pausedClock) pause(d time.Duration) { c.paused.Add(int64(d)) }

// A holder paused past its validity finds its lock lost as soon as it continues, before the
// timer that ends the lock has run: a lock's and a term's Lost, Err, and the context of Do's
// and Lead's function all read the clock.
func TestAPausedHolderFindsItsLockLostAtOnce(t *testing.T) {
	const ttl = 10 * time.Second // the timers are seconds away when the tests look
	ctx := context.Background()
	start := func(t *testing.T) (*pausedClock, *redlock.Client) {
		clk := newPausedClock()
		_, c := cluster(t, 3, redlock.WithClock(clk), redlock.WithFencing())
		return clk, c
	}
	gone := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	t.Run("Lock", func(t *testing.T) {
		clk, c := start(t)
		l, err := c.Lock(ctx, "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		lost := l.Lost() // its timer armed
		clk.pause(2 * ttl)
		if !gone(l.Lost()) || !errors.Is(l.Err(), redlock.ErrNotHeld) {
			t.Fatalf("Lost() open, Err() = %v after a pause past Until", l.Err())
		}
		if !gone(lost) {
			t.Fatal("the channel of an earlier Lost call is still open")
		}
	})
	t.Run("Term", func(t *testing.T) {
		clk, c := start(t)
		e, err := c.Election("e", ttl)
		if err != nil {
			t.Fatal(err)
		}
		term, err := e.Campaign(ctx, "me")
		if err != nil {
			t.Fatal(err)
		}
		clk.pause(2 * ttl)
		if !gone(term.Lost()) {
			t.Fatal("Term.Lost() open after a pause past Until")
		}
	})
	t.Run("Do", func(t *testing.T) {
		clk, c := start(t)
		var done bool
		err := c.Do(ctx, "k", ttl, func(ctx context.Context) error {
			clk.kept(t)
			clk.pause(2 * ttl)
			done = ctx.Err() != nil && gone(ctx.Done())
			return nil
		})
		if !done || !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("fn's context done: %v; Do = %v, want ErrNotHeld", done, err)
		}
	})
	t.Run("Lead", func(t *testing.T) {
		clk, c := start(t)
		e, err := c.Election("e", ttl)
		if err != nil {
			t.Fatal(err)
		}
		var done bool
		err = e.Lead(ctx, "me", func(ctx context.Context, _ *redlock.Term) error {
			clk.kept(t)
			clk.pause(2 * ttl)
			done = ctx.Err() != nil
			return nil
		})
		if !done || !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("fn's context done: %v; Lead = %v, want ErrNotHeld", done, err)
		}
	})
}
