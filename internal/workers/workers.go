// Package workers runs functions on goroutines that it keeps for the next function once they
// are idle. A new goroutine starts with a small stack and grows it, by copying, as deep as the
// call it runs: a node call through go-redis grows it each time, where a kept goroutine has
// grown it already. It imports only the standard library.
package workers

import (
	"slices"
	"sync"
	"time"
)

// idleFor is how long a worker waits for its next function before it ends (up to twice that):
// long enough to serve the next round of a steady caller, short enough that an unused pool
// holds no goroutine for long.
const idleFor = 100 * time.Millisecond

// A Pool runs functions on its workers. Its zero value is not usable: make one with New. Go is
// safe for concurrent use.
//
// An idle worker waits on a channel of its own, and Go hands a function to the one that went
// idle last: waiting is one receive, not a select over a channel that every idle worker shares
// and a timer of each worker's own (which the runtime adds to its heap and takes out again at
// every wait, and locks with the shared channel). One timer of the pool's, armed while some
// worker is idle, ends those idle for idleFor.
type Pool struct {
	mu     sync.Mutex
	idle   []*worker // idle workers, the longest idle first
	sweep  *time.Timer
	armed  bool // sweep is set to go off
	closed bool
}

// A worker receives its next function on next (nil: end); since is when it last went idle.
type worker struct {
	next  chan func()
	since time.Time
}

// New returns a Pool with no workers yet.
func New() *Pool { return &Pool{} }

// Go runs f on an idle worker, or on a new goroutine when none is idle; it never blocks. After
// Close, f still runs, on a goroutine that ends with it.
func (p *Pool) Go(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.next <- f // an idle worker's channel is empty: it never blocks
		return
	}
	p.mu.Unlock()
	go p.work(&worker{next: make(chan func(), 1)}, f)
}

// work runs f, then the functions handed to w, until it is told to end.
func (p *Pool) work(w *worker, f func()) {
	for f != nil {
		f()
		if !p.park(w) {
			return
		}
		f = <-w.next
	}
}

// park makes w idle, unless p closed; it reports whether it did.
func (p *Pool) park(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	w.since = time.Now()
	p.idle = append(p.idle, w)
	if !p.armed {
		p.armed = true
		if p.sweep == nil {
			p.sweep = time.AfterFunc(idleFor, p.retire)
		} else {
			p.sweep.Reset(idleFor)
		}
	}
	return true
}

// retire ends the workers idle for idleFor or longer, and sets the timer again for the next
// one while some are idle.
func (p *Pool) retire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].since) >= idleFor {
		p.idle[n].next <- nil
		n++
	}
	p.idle = slices.Delete(p.idle, 0, n)
	if len(p.idle) == 0 {
		p.armed = false
		return
	}
	p.sweep.Reset(idleFor - now.Sub(p.idle[0].since))
}

// Close ends the idle workers, and every busy one once its function returns. It does not wait
// for them.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.sweep != nil {
		p.sweep.Stop()
	}
	for _, w := range p.idle {
		w.next <- nil
	}
	p.idle = nil
}
