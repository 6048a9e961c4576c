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
// closed. A ticker tells the time, so that a function costs no timer of its own.
func (p *Pool) work(f func()) {
	tick := time.NewTicker(idleFor)
	defer tick.Stop()
	f()
	ran := true // since the last tick
	for {
		select {
		case f = <-p.handoff:
			f()
			ran = true
		case <-tick.C:
			if !ran {
				return
			}
			ran = false
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
