package simulate

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/redlock/clock"
)

// skew maps true time (the time package) to the reading of a clock that started at the same
// moment: reading = base + rate*(true - since), where base and since move at every change of
// rate and every jump. The zero rate is taken as 1.
type skew struct {
	mu    sync.Mutex
	since time.Time // true time of the last change
	base  time.Time // the reading at since
	rate  float64
}

func newSkew(start time.Time) *skew { return &skew{since: start, base: start, rate: 1} }

func (s *skew) read(now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readLocked(now)
}

func (s *skew) readLocked(now time.Time) time.Time {
	return s.base.Add(time.Duration(float64(now.Sub(s.since)) * s.rate))
}

// setRate makes the clock run at rate r from now on.
func (s *skew) setRate(r float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.base, s.since, s.rate = s.readLocked(now), now, r
}

// jump moves the reading by d at once (forward when d > 0).
func (s *skew) jump(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.base, s.since = s.readLocked(now).Add(d), now
}

func (s *skew) getRate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rate
}

// A clientClock is a client's own clock: skewed against true time, and able to stop the
// goroutine reading it, the way a GC pause or a stopped VM stops a real process. It implements
// clock.Clock for redlock.WithClock.
type clientClock struct {
	skew *skew

	mu      sync.Mutex
	reads   int           // readings by the lock library (odd: start of a call, even: its end)
	pauseAt int           // pause on this reading, 0 for none
	pause   time.Duration // for how long, in true time
}

var _ clock.Clock = (*clientClock)(nil)

func newClientClock(start time.Time) *clientClock { return &clientClock{skew: newSkew(start)} }

// Now is the reading the lock library sees. Redlock reads the clock twice per attempt, before
// the first request and after the quorum; pauseAfterQuorum stops the caller at the second.
func (c *clientClock) Now() time.Time {
	c.mu.Lock()
	c.reads++
	var pause time.Duration
	if c.reads == c.pauseAt {
		pause, c.pauseAt = c.pause, 0
	}
	c.mu.Unlock()
	if pause > 0 {
		time.Sleep(pause)
	}
	return c.now()
}

// now is the reading without counting it or pausing: the workload's own view of the time.
func (c *clientClock) now() time.Time { return c.skew.read(time.Now()) }

// NewTimer fires after d has passed on this clock.
func (c *clientClock) NewTimer(d time.Duration) *time.Timer {
	return time.NewTimer(c.trueDuration(d))
}

// AfterFunc calls f in its own goroutine after d has passed on this clock. (The clock.Clock
// interface gains this method on main; having it here already keeps the merge building.)
func (c *clientClock) AfterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(c.trueDuration(d), f)
}

// sleep waits until d has passed on this clock.
func (c *clientClock) sleep(d time.Duration) { time.Sleep(c.trueDuration(d)) }

// wait waits until d has passed on this clock, or until ctx is done: then it returns ctx's
// error.
func (c *clientClock) wait(ctx context.Context, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *clientClock) trueDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.skew.getRate())
}

// pauseAfterQuorum stops the caller for d at the end of its next lock attempt: between the
// replies and the computation of the validity.
func (c *clientClock) pauseAfterQuorum(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.reads + 1
	if next%2 == 1 {
		next++
	}
	c.pauseAt, c.pause = next, d
}
