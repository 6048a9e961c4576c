package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// boundsNodeTimeout is the node timeout of the tests below: long against the machine's
// hiccups, so that a bound of twice the node timeout is told from three or four.
const boundsNodeTimeout = time.Second

// Close returns within twice the node timeout (and a margin for a busy machine) when every
// node is stopped (SIGSTOP: silent), whatever the Client is doing: holding a lock, or waiting
// in Lock or Campaign. Lock and Campaign return by the caller's deadline: the clean-up that
// must outlive it runs after they returned.
func TestRealServersCloseAndDeadlinesBoundedWhenEveryNodeStops(t *testing.T) {
	t.Parallel()
	const bound = 2*boundsNodeTimeout + boundsNodeTimeout/2
	const late = boundsNodeTimeout / 2 // how far past its deadline a call may return
	cases := []struct {
		name string
		// run starts what the Client of c does when its nodes stop, once it does it, and
		// returns what to check when it ended; other holds the key (and the election).
		run func(t *testing.T, c *redlock.Client, waiting <-chan struct{}) (wait func() error)
	}{
		{"Close with a held lock", func(t *testing.T, c *redlock.Client, _ <-chan struct{}) func() error {
			if _, err := c.TryLock(context.Background(), "mine", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"Close with a waiting Lock", func(t *testing.T, c *redlock.Client, waiting <-chan struct{}) func() error {
			return waitFor(t, waiting, func() error { _, err := c.Lock(context.Background(), "k", 10*time.Second); return err })
		}},
		{"Close with a waiting Campaign", func(t *testing.T, c *redlock.Client, waiting <-chan struct{}) func() error {
			e, err := c.Election("e", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return waitFor(t, waiting, func() error { _, err := e.Campaign(context.Background(), "me"); return err })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := boundsSetup(t)
			waiting := make(chan struct{}, 1)
			c, rounds := boundsClient(t, ss, waiting)
			wait := tc.run(t, c, waiting)
			for _, s := range ss {
				s.Pause(t)
			}
			if wait != nil {
				// A waiting call retries every millisecond or two: once an attempt has timed
				// out, the next is on its way to the stopped nodes when Close begins.
				select {
				case <-rounds:
				case <-time.After(10 * time.Second):
					t.Fatal("no attempt timed out after 10s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			start := time.Now()
			c.Close()
			d := time.Since(start)
			if d > bound {
				t.Errorf("Close took %v with every node stopped; want at most about twice the node timeout (%v)", d, boundsNodeTimeout)
			}
			t.Logf("Close took %v", d)
			if wait != nil {
				if err := wait(); !errors.Is(err, redlock.ErrClosed) {
					t.Errorf("the waiting call returned %v, want ErrClosed", err)
				}
			}
		})
	}
	for _, call := range []string{"Lock", "Campaign"} {
		t.Run(call+" returns by its deadline", func(t *testing.T) {
			ss := boundsSetup(t)
			waiting := make(chan struct{}, 1)
			c, _ := boundsClient(t, ss, waiting)
			e, err := c.Election("e", 10*time.Second) // sends nothing
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*boundsNodeTimeout/2)
			defer cancel()
			// The time the call returned, taken in its goroutine: this test's own goroutine
			// may run late on a busy machine, which says nothing of the call.
			var returned time.Time
			wait := waitFor(t, waiting, func() error {
				defer func() { returned = time.Now() }()
				if call == "Lock" {
					_, err := c.Lock(ctx, "k", 10*time.Second)
					return err
				}
				_, err := e.Campaign(ctx, "me")
				return err
			})
			for _, s := range ss {
				s.Pause(t)
			}
			err = wait()
			deadline, _ := ctx.Deadline()
			d := returned.Sub(deadline)
			if d > late {
				t.Errorf("%s returned %v after its deadline (%v)", call, d, err)
			}
			t.Logf("%s returned %v after its deadline", call, d)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s = %v, want DeadlineExceeded", call, err)
			}
		})
	}
}

// boundsSetup starts three servers on which another Client holds "k" and leads "e".
func boundsSetup(t *testing.T) []*redistest.Server {
	t.Helper()
	ss := redistest.StartN(t, 3)
	other, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	ctx := context.Background()
	if _, err := other.TryLock(ctx, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	e, err := other.Election("e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.TryCampaign(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	return ss
}

// boundsClient returns a Client over ss with the test's node timeout and a retry delay of 1 to
// 2 ms, which tells waiting when a call begins to wait and the returned channel when an
// attempt ran out of time.
func boundsClient(t *testing.T, ss []*redistest.Server, waiting chan<- struct{}) (*redlock.Client, <-chan struct{}) {
	t.Helper()
	timedOut := make(chan struct{}, 1)
	tell := func(ch chan<- struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(boundsNodeTimeout),
		redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond),
		redlock.WithObserver(locktrace.Observer{
			Waiting: func(context.Context, locktrace.Call) { tell(waiting) },
			Round: func(_ context.Context, r locktrace.Round) {
				if r.Elapsed >= boundsNodeTimeout {
					tell(timedOut)
				}
			},
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, timedOut
}

// waitFor runs call in a goroutine, waits until it waits (within 10 s), and returns a function
// that waits for its error (for at most 10 s).
func waitFor(t *testing.T, waiting <-chan struct{}, call func() error) func() error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("returned before it waited: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not waiting after 10s")
	}
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("not returned 10s later")
			return nil
		}
	}
}
