package workers

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A worker that ran a function waits for the next one: a function handed over then reaches
// it, not a new goroutine, and it waits again afterwards.
func TestReusesIdleWorkers(t *testing.T) {
	p := New()
	defer p.Close()
	done := make(chan struct{})
	p.Go(func() { done <- struct{}{} })
	<-done
	w := waitIdle(t, p)
	p.Go(func() { done <- struct{}{} })
	p.mu.Lock()
	left := len(p.idle)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d workers idle after Go, want 0: the function did not go to the idle worker", left)
	}
	<-done
	if again := waitIdle(t, p); again != w {
		t.Fatal("another worker went idle than the one the function was handed to")
	}
}

// waitIdle waits until p has exactly one idle worker, and returns it.
func waitIdle(t *testing.T, p *Pool) *worker {
	t.Helper()
	deadline := time.Now().Add(idleFor / 2)
	for {
		p.mu.Lock()
		idle := slices.Clone(p.idle)
		p.mu.Unlock()
		if len(idle) == 1 {
			return idle[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers idle, want 1", len(idle))
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
