package workers

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A worker that ran a function waits for the next one: a function handed over then reaches
// it, on the goroutine that ran the first.
func TestReusesIdleWorkers(t *testing.T) {
	p := New()
	defer p.Close()
	done := make(chan struct{})
	p.Go(func() { done <- struct{}{} })
	<-done
	deadline := time.Now().Add(idleFor / 2)
	for {
		select {
		case p.handoff <- func() { done <- struct{}{} }:
			<-done
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not wait for the next function")
		}
		runtime.Gosched()
	}
}

// Idle workers end after idleFor and on Close; busy ones once their function returns; Go after
// Close still runs its function. goleak checks that none is left.
func TestWorkersEnd(t *testing.T) {
	p := New()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		p.Go(func() { time.Sleep(time.Millisecond); wg.Done() })
	}
	wg.Wait()
	time.Sleep(2 * idleFor)
	q := New()
	q.Go(func() {})
	q.Close()
	ran := make(chan struct{})
	q.Go(func() { close(ran) })
	<-ran
}
