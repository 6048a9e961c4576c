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

// A Reply is one node's answer to a call. Err == nil means the node succeeded.
type Reply[T any] struct {
	Node  int
	Value T
	Err   error
}

// A Round is one call fanned out to every node. Its methods are not safe for concurrent use:
// one goroutine decides, then at most one collects the rest.
type Round[T any] struct {
	replies chan Reply[T]
	arrived []bool
	waiting int // replies not yet read from the channel
}

// Start calls call(ctx, i) for every node i in [0, n), each in its own goroutine tracked by wg,
// and returns at once. Bounding the calls in time is the caller's business: Decide stops waiting
// when told to, and a call that goes on anyway ends when call returns.
func Start[T any](ctx context.Context, wg *sync.WaitGroup, n int, call func(ctx context.Context, node int) (T, error)) *Round[T] {
	r := &Round[T]{replies: make(chan Reply[T], n), arrived: make([]bool, n), waiting: n}
	wg.Add(n)
	for i := range n {
		go func() { // not wg.Go: its wrapper would cost an allocation a node
			defer wg.Done()
			v, err := call(ctx, i)
			r.replies <- Reply[T]{Node: i, Value: v, Err: err}
		}()
	}
	return r
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
	n := len(r.arrived)
	out := Outcome[T]{Replies: make([]Reply[T], 0, n)}
	ok, failed := 0, 0
	for ok < need && failed <= n-need && r.waiting > 0 {
		select {
		case rep := <-r.replies:
			r.waiting--
			r.arrived[rep.Node] = true
			out.Replies = append(out.Replies, rep)
			if rep.Err == nil {
				ok++
			} else {
				failed++
			}
		case <-done:
			failed, out.Stopped = n, true // everyone still out counts as failed
		case <-deadline:
			failed, out.Stopped = n, true
		}
	}
	out.Quorum = ok >= need
	if r.waiting > 0 {
		out.Pending = make([]int, 0, r.waiting)
	}
	for i, got := range r.arrived {
		if !got {
			out.Pending = append(out.Pending, i)
		}
	}
	return out
}

// Linger reads the replies still in flight after Decide into out until they are all in or
// deadline fires, keeping out.Pending up to date.
func (r *Round[T]) Linger(out *Outcome[T], deadline <-chan time.Time) {
	for r.waiting > 0 {
		select {
		case rep := <-r.replies:
			r.waiting--
			r.arrived[rep.Node] = true
			out.Replies = append(out.Replies, rep)
		case <-deadline:
			return
		}
		out.Pending = slices.DeleteFunc(out.Pending, func(i int) bool { return r.arrived[i] })
	}
}

// Rest waits for the replies still in flight after Decide and calls f with each as it arrives.
func (r *Round[T]) Rest(f func(Reply[T])) {
	for ; r.waiting > 0; r.waiting-- {
		rep := <-r.replies
		r.arrived[rep.Node] = true
		f(rep)
	}
}
