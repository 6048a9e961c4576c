package quorum_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/quorum"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errNo = errors.New("no")

func TestOf(t *testing.T) {
	for n, want := range []int{1, 1, 2, 2, 3, 3, 4, 4} {
		if got := quorum.Of(n); got != want {
			t.Errorf("Of(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPermits(t *testing.T) {
	for _, tc := range []struct{ n, p, want int }{
		{5, 1, 3}, {5, 2, 4}, {5, 3, 4}, {5, 4, 5}, {5, 1000, 5}, {5, math.MaxInt, 5},
		{3, 1, 2}, {3, 2, 3}, {1, 1, 1}, {1, 7, 1}, {7, 2, 5}, {7, 3, 6}, {9, 2, 7},
	} {
		if got := quorum.Permits(tc.n, tc.p); got != tc.want {
			t.Errorf("Permits(%d, %d) = %d, want %d", tc.n, tc.p, got, tc.want)
		}
	}
	// Against the formula itself, where p*n does not overflow; and p = 1 is a majority.
	for n := 1; n <= 12; n++ {
		for p := 1; p <= 30; p++ {
			want := min(p*n/(p+1)+1, n)
			if got := quorum.Permits(n, p); got != want || (p+1)*got <= p*n {
				t.Errorf("Permits(%d, %d) = %d, want %d", n, p, got, want)
			}
		}
		if quorum.Permits(n, 1) != quorum.Of(n) {
			t.Errorf("Permits(%d, 1) = %d, not a majority", n, quorum.Permits(n, 1))
		}
	}
}

// Every subset of failed nodes of five: quorum iff at least three succeed, and the decision
// never needs more replies than it takes to know.
func TestDecideEverySubset(t *testing.T) {
	const n = 5
	for mask := range 1 << n {
		var wg sync.WaitGroup
		r := quorum.Start(context.Background(), &wg, n, func(_ context.Context, i int) (int, error) {
			if mask&(1<<i) != 0 {
				return 0, errNo
			}
			return i, nil
		})
		out := r.Decide(quorum.Of(n), nil, nil)
		r.Rest(nil, func(quorum.Reply[int]) {})
		wg.Wait()
		failed := 0
		for i := range n {
			if mask&(1<<i) != 0 {
				failed++
			}
		}
		if want := n-failed >= 3; out.Quorum != want {
			t.Errorf("mask %05b: Quorum = %v, want %v", mask, out.Quorum, want)
		}
		if len(out.Replies)+len(out.Pending) != n {
			t.Errorf("mask %05b: %d replies + %d pending != %d", mask, len(out.Replies), len(out.Pending), n)
		}
	}
}

// A node that never answers does not delay a decision that is already known, and its reply is
// handed to Rest once it comes.
func TestDecideDoesNotWaitForStragglers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slow       []int
		fail       []int
		wantQuorum bool
	}{
		{"success with two silent", []int{3, 4}, nil, true},
		{"failure with two silent", []int{3, 4}, []int{0, 1, 2}, false},
		{"failure with one silent", []int{4}, []int{0, 1, 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var wg sync.WaitGroup
			r := quorum.Start(context.Background(), &wg, 5, func(_ context.Context, i int) (int, error) {
				if slices.Contains(tc.slow, i) {
					<-release
					return i, nil
				}
				if slices.Contains(tc.fail, i) {
					return 0, errNo
				}
				return i, nil
			})
			out := r.Decide(3, nil, nil)
			if out.Stopped {
				t.Fatal("Stopped without a stop")
			}
			if out.Quorum != tc.wantQuorum {
				t.Fatalf("Quorum = %v, want %v", out.Quorum, tc.wantQuorum)
			}
			// The silent nodes are pending; a fast one may be too when the decision came first.
			for _, i := range tc.slow {
				if !slices.Contains(out.Pending, i) {
					t.Fatalf("Pending = %v, want it to hold the silent node %d", out.Pending, i)
				}
			}
			close(release)
			var late []int
			r.Rest(nil, func(rep quorum.Reply[int]) { late = append(late, rep.Node) })
			slices.Sort(late)
			if !slices.Equal(late, out.Pending) {
				t.Fatalf("late replies from %v, want the pending %v", late, out.Pending)
			}
			wg.Wait()
		})
	}
}

func TestDecideStops(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	r := quorum.Start(context.Background(), &wg, 3, func(_ context.Context, i int) (int, error) {
		if i > 0 {
			<-release
		}
		return i, nil
	})
	stop := make(chan struct{})
	close(stop)
	out := r.Decide(2, stop, nil)
	if out.Quorum || !out.Stopped {
		t.Fatalf("after stop with one reply of three: Quorum %v, Stopped %v", out.Quorum, out.Stopped)
	}
	close(release)
	n := 0
	r.Rest(nil, func(quorum.Reply[int]) { n++ })
	if got := len(out.Replies) + n; got != 3 {
		t.Fatalf("saw %d replies in all, want 3", got)
	}
	wg.Wait()
}

func TestLinger(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	r := quorum.Start(context.Background(), &wg, 5, func(_ context.Context, i int) (int, error) {
		switch i {
		case 0, 1, 2:
			return 0, errNo
		case 4:
			<-release
		}
		return i, nil
	})
	out := r.Decide(3, nil, nil)
	if out.Quorum {
		t.Fatal("quorum with three failures")
	}
	// Node 3 answers at once; node 4 only after the deadline.
	r.Linger(&out, nil, time.After(500*time.Millisecond))
	if !slices.Equal(out.Pending, []int{4}) {
		t.Fatalf("Pending after Linger = %v, want [4]", out.Pending)
	}
	close(release)
	n := 0
	r.Rest(nil, func(quorum.Reply[int]) { n++ })
	if n != 1 {
		t.Fatalf("Rest saw %d replies, want 1", n)
	}
	wg.Wait()
}

// Gather waits for every node, whatever each says: a failure that comes first does not end it.
// Every subset of failed nodes of four, each failure at once and each success after it; a node
// that never answers is Pending when the deadline fires.
// Linger stops when done is closed, before its deadline: the caller whose context ended does
// not wait for a node that does not answer.
func TestLingerStopsWhenDone(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	r := quorum.Start(context.Background(), &wg, 3, func(_ context.Context, i int) (int, error) {
		if i == 2 {
			<-release // silent, whatever the context says
		}
		return 0, errNo
	})
	out := r.Decide(2, nil, nil)
	done := make(chan struct{})
	time.AfterFunc(50*time.Millisecond, func() { close(done) })
	lingered := make(chan struct{})
	go func() {
		r.Linger(&out, done, nil)
		close(lingered)
	}()
	select {
	case <-lingered:
	case <-time.After(10 * time.Second):
		t.Fatal("Linger still waiting 10s after done was closed")
	}
	if !slices.Equal(out.Pending, []int{2}) {
		t.Fatalf("Pending after Linger = %v, want [2]", out.Pending)
	}
	close(release)
	r.Rest(nil, func(quorum.Reply[int]) {})
	wg.Wait()
}

func TestGather(t *testing.T) {
	const n = 4
	for mask := range 1 << n {
		var wg sync.WaitGroup
		r := quorum.Start(context.Background(), &wg, n, func(_ context.Context, i int) (int, error) {
			if mask&(1<<i) != 0 {
				return 0, errNo
			}
			time.Sleep(5 * time.Millisecond) // after every failure
			return i, nil
		})
		out := r.Gather(nil, nil)
		if len(out.Replies) != n || len(out.Pending) != 0 || out.Stopped || out.Quorum != (mask == 0) {
			t.Fatalf("failed %04b: %d replies, Pending %v, Stopped %v, Quorum %v; want all %d", mask, len(out.Replies), out.Pending, out.Stopped, out.Quorum, n)
		}
		wg.Wait()
	}

	release := make(chan struct{})
	var wg sync.WaitGroup
	r := quorum.Start(context.Background(), &wg, 3, func(_ context.Context, i int) (int, error) {
		switch i {
		case 0:
			return 0, errNo
		case 2:
			<-release
		}
		return i, nil
	})
	out := r.Gather(nil, time.After(200*time.Millisecond))
	if len(out.Replies) != 2 || !slices.Equal(out.Pending, []int{2}) || !out.Stopped || out.Quorum {
		t.Fatalf("one node silent: %d replies, Pending %v, Stopped %v, Quorum %v", len(out.Replies), out.Pending, out.Stopped, out.Quorum)
	}
	close(release)
	wg.Wait()
}
