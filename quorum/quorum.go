// Package quorum fans one call out to N nodes at once and decides as soon as the outcome is
// known: a quorum of successes, or so many failures that a quorum is out of reach. Calls still
// in flight at that moment (stragglers) carry on, and their replies stay available for clean-up.
//
// Package quorum knows nothing of Redis and imports only the standard library.
package quorum

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Of returns the size of a majority of n nodes: n/2 + 1.
func Of(n int) int { return n/2 + 1 }

// Permits returns how many of n nodes each holder of a semaphore of p ≥ 1 permits must hold so
// that no more than p hold it at once: q = floor(p*n/(p+1)) + 1, at most n. Then p+1 holders
// would need (p+1)*q > p*n places, more than n nodes admitting p holders each can give. It is
// computed as n - ceil(n/(p+1)) + 1, which cannot overflow; p = 1 gives Of(n).
func Permits(n, p int) int {
	if p >= n-1 {
		return n
	}
	return n - (n+p)/(p+1) + 1
}

// A Reply is one node's answer to a call. Err == nil means the node succeeded.
type Reply[T any] struct {
	Node  int
	Value T
	Err   error
}

// A Round is one call fanned out to every node. Decide, Linger and Rest are not safe for
// concurrent use: one goroutine decides, then at most one collects the rest. Go and Put are.
type Round[T any] struct {
	n int
	// The replies in order of arrival, in storage made for n of them: Decide hands out those it
	// read without a copy. Put appends under mu, then sends on arrived.
	mu      sync.Mutex
	replies []Reply[T]
	arrived chan struct{}
	read    int // replies read by Decide, Linger or Rest
}

// New returns a Round over n nodes that expects exactly one reply from each, from Go or Put.
func New[T any](n int) *Round[T] {
	return &Round[T]{n: n, replies: make([]Reply[T], 0, n), arrived: make(chan struct{}, n)}
}

// A Runner runs functions on goroutines of its own, such as a *sync.WaitGroup (whose Go tracks
// them) or a pool that keeps its goroutines for the next call.
type Runner interface{ Go(f func()) }

// Start calls call(ctx, i) for every node i in [0, n), each on a goroutine of run (a new one of
// its own when run is nil), and returns at once. Bounding the calls in time is the caller's
// business: Decide stops waiting when told to, and a call that goes on anyway ends when call
// returns.
func Start[T any](ctx context.Context, run Runner, n int, call func(ctx context.Context, node int) (T, error)) *Round[T] {
	r := New[T](n)
	for i := range n {
		r.Go(ctx, run, i, call)
	}
	return r
}

// Go calls call(ctx, node) on a goroutine of run (a new one of its own when run is nil); its
// result is node's reply.
func (r *Round[T]) Go(ctx context.Context, run Runner, node int, call func(ctx context.Context, node int) (T, error)) {
	f := func() {
		v, err := call(ctx, node)
		r.Put(Reply[T]{Node: node, Value: v, Err: err})
	}
	if run == nil {
		go f()
		return
	}
	run.Go(f)
}

// Put delivers a reply obtained elsewhere than by Go; it never blocks. Each node gets one reply.
func (r *Round[T]) Put(rep Reply[T]) {
	r.mu.Lock()
	r.replies = append(r.replies, rep)
	r.mu.Unlock()
	r.arrived <- struct{}{}
}

// next returns the first reply not read yet, once arrived told that it is in.
func (r *Round[T]) next() Reply[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read++
	return r.replies[r.read-1]
}

// readSoFar returns the replies read so far. Its capacity ends there, so that appending to it
// never writes over replies Put adds after them.
func (r *Round[T]) readSoFar() []Reply[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replies[:r.read:r.read]
}

// An Outcome is what a Round had shown when it was decided.
type Outcome[T any] struct {
	// Quorum reports whether need nodes succeeded.
	Quorum bool
	// Replies are the replies that arrived before the decision, in order of arrival.
	Replies []Reply[T]
	// Pending are the nodes that had not replied, in ascending order.
	Pending []int
	// Stopped reports that done or deadline ended the wait, rather than the replies.
	Stopped bool
}

// Decide reads replies until need of them succeeded, until so many failed that need is out of
// reach, or until done is closed or deadline fires (nodes that have not replied by then count as
// failed). Either channel may be nil.
func (r *Round[T]) Decide(need int, done <-chan struct{}, deadline <-chan time.Time) Outcome[T] {
	return r.decide(need, r.n-need, done, deadline)
}

// Gather reads replies until every node has replied, whatever each said, or until done is
// closed or deadline fires: a read that wants every answer it can have within a bound. Quorum
// reports whether every node succeeded.
func (r *Round[T]) Gather(done <-chan struct{}, deadline <-chan time.Time) Outcome[T] {
	return r.decide(r.n, r.n, done, deadline)
}

// decide reads replies until need of them succeeded, until more than tolerate failed, until
// all are in, or until done or deadline.
func (r *Round[T]) decide(need, tolerate int, done <-chan struct{}, deadline <-chan time.Time) Outcome[T] {
	n := r.n
	var out Outcome[T]
	ok, failed := 0, 0
	for ok < need && failed <= tolerate && r.read < n && !out.Stopped {
		select {
		case <-r.arrived:
			if r.next().Err == nil {
				ok++
			} else {
				failed++
			}
		case <-done:
			out.Stopped = true // everyone still out counts as failed
		case <-deadline:
			out.Stopped = true
		}
	}
	out.Quorum = ok >= need
	out.Replies = r.readSoFar()
	if r.read < n {
		out.Pending = make([]int, 0, n-r.read)
		for i := range n {
			if !slices.ContainsFunc(out.Replies, func(rep Reply[T]) bool { return rep.Node == i }) {
				out.Pending = append(out.Pending, i)
			}
		}
	}
	return out
}

// Linger reads the replies still in flight after Decide into out until they are all in, done
// is closed or deadline fires (nil: never), keeping out.Pending up to date.
func (r *Round[T]) Linger(out *Outcome[T], done <-chan struct{}, deadline <-chan time.Time) {
	for r.read < r.n {
		select {
		case <-r.arrived:
			rep := r.next()
			out.Replies = append(out.Replies, rep)
			out.Pending = slices.DeleteFunc(out.Pending, func(i int) bool { return i == rep.Node })
		case <-done:
			return
		case <-deadline:
			return
		}
	}
}

// Rest waits for the replies still in flight after Decide and calls f with each as it arrives,
// until they are all in or done is closed (nil: never).
func (r *Round[T]) Rest(done <-chan struct{}, f func(Reply[T])) {
	for r.read < r.n {
		select {
		case <-r.arrived:
			f(r.next())
		case <-done:
			return
		}
	}
}
