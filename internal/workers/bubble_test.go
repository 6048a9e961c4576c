package workers

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Inside a testing/synctest bubble, functions that outlast idleFor (the pool's idle timer goes off
// while they run) and end at the very instant that timers of their own go off, which the bubble's
// root goroutine runs then. When each worker waited on an idle timer of its own, a worker that went
// back to receive from it ran that timer's send on its own thread, with the race context of the
// bubble's timers, while the root used it on another: with -race the test process died with SIGSEGV
// in ThreadSanitizer code (go1.26.8) in most runs on 2 cores. Without -race it checks only that
// every function runs.
func TestIdleTimerThatWentOffInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New()
		defer p.Close()
		for range 500 {
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				p.Go(func() {
					defer wg.Done()
					for range 8 {
						time.AfterFunc(idleFor+time.Millisecond, func() {})
					}
					time.Sleep(idleFor + time.Millisecond)
				})
			}
			wg.Wait()
		}
	})
}
