// Package clock is time as the lock algorithm sees it: a Clock to read it (real, or skewed and
// steered by the simulator) and the one place where the drift-corrected validity of a lock is
// computed.
//
// Package clock imports only the standard library.
package clock

import "time"

// A Clock tells the time and waits. The algorithm measures elapsed time by subtracting two
// readings of Now, so a Clock whose readings carry Go's monotonic reading (as time.Now does)
// is immune to wall-clock steps.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires after d has passed on this clock.
	NewTimer(d time.Duration) *time.Timer
	// AfterFunc calls f in its own goroutine after d has passed on this clock.
	AfterFunc(d time.Duration, f func()) *time.Timer
}

// Real is the system clock: time.Now and time.NewTimer.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                       { return time.Now() }
func (realClock) NewTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }
func (realClock) AfterFunc(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, f)
}

// MinDrift is the part of the drift allowance that does not grow with the TTL: it covers the
// millisecond granularity of Redis expiry.
const MinDrift = 2 * time.Millisecond

// Drift is how much of a ttl a lock holder must give up for clocks that run at different rates:
// ttl*factor + MinDrift.
func Drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + MinDrift
}

// Deadline is the end of a lock's validity on the local clock when it was requested at start
// with the given ttl: start + ttl - Drift(ttl, factor). The time left, deadline.Sub(now), is the
// Redlock validity ttl - elapsed - drift.
func Deadline(start time.Time, ttl time.Duration, factor float64) time.Time {
	return start.Add(ttl - Drift(ttl, factor))
}
