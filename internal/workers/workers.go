// Package workers runs functions on goroutines that it keeps for the next function once they
// are idle. A new goroutine starts with a small stack and grows it, by copying, as deep as the
// call it runs: a node call through go-redis grows it each time, where a kept goroutine has
// grown it already. It imports only the standard library.
package workers

import (
	"sync"
	"time"
)

// idleFor is how long a worker waits for its next function before it ends (up to twice that):
// long enough to serve the next round of a steady caller, short enough that an unused pool
// holds no goroutine for long.
const idleFor = 100 * time.Millisecond

// A Pool runs functions on its workers. Its zero value is not usable: make one with New. Go is
// safe for concurrent use.
type Pool struct {
	handoff chan func() // an idle worker receives its next function here
	closed  chan struct{}
	close   sync.Once
}

// New returns a Pool with no workers yet.
func New() *Pool {
	return &Pool{handoff: make(chan func()), closed: make(chan struct{})}
}

// Go runs f on an idle worker, or on a new goroutine when none is idle; it never blocks. After
// Close, f still runs, on a goroutine that ends with it.
func (p *Pool) Go(f func()) {
	select {
	case p.handoff <- f:
	default:
		go p.work(f)
	}
}

// work runs f, then the functions handed to it, until a whole idleFor passed without one, or p
// closed. One timer, re-armed only when it goes off, tells the time, so that a function costs
// no timer operation of its own: only a reading of the clock.
//
// The timer is never received from once it went off while a function ran and nobody waited
// on it: it is re-armed instead, that tick counting as one with a function. Receiving from
// such a timer runs its send on the receiving goroutine. Inside a testing/synctest bubble built
// with -race, that send uses the race context of the bubble's timers, which the bubble's root
// goroutine may be using at the same moment, from another thread, to run the timers due then
// (an AfterFunc starting its goroutine): the race runtime's state for that context is not safe
// for two threads, and the process dies with SIGSEGV in ThreadSanitizer code (go1.26.8). Any
// function that waits past idleFor (a node call to a slow node, a collector waiting for late
// replies) left the worker's ticker in that state; it was the simulator's crash.
func (p *Pool) work(f func()) {
	t := time.NewTimer(idleFor)
	defer t.Stop()
	due := time.Now().Add(idleFor)
	f()
	ran := true // since the timer was armed
	for {
		if now := time.Now(); !now.Before(due) { // it went off while f ran: see above
			t.Reset(idleFor)
			due, ran = now.Add(idleFor), false
		}
		select {
		case f = <-p.handoff:
			f()
			ran = true
		case <-t.C:
			if !ran {
				return
			}
			t.Reset(idleFor)
			due, ran = time.Now().Add(idleFor), false
		case <-p.closed:
			return
		}
	}
}

// Close ends the idle workers, and every busy one once its function returns. It does not wait
// for them.
func (p *Pool) Close() {
	p.close.Do(func() { close(p.closed) })
}
