package clock_test

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock/clock"
)

func TestDrift(t *testing.T) {
	for _, tc := range []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration
	}{
		{10 * time.Second, 0.01, 102 * time.Millisecond},
		{10 * time.Second, 0, 2 * time.Millisecond},
		{time.Second, 0.1, 102 * time.Millisecond},
	} {
		if got := clock.Drift(tc.ttl, tc.factor); got != tc.want {
			t.Errorf("Drift(%v, %v) = %v, want %v", tc.ttl, tc.factor, got, tc.want)
		}
	}
}

func TestDeadlineIsValidityOnTheMonotonicClock(t *testing.T) {
	start := time.Now()
	d := clock.Deadline(start, 10*time.Second, 0.01)
	if got, want := d.Sub(start), 10*time.Second-102*time.Millisecond; got != want {
		t.Fatalf("deadline - start = %v, want %v", got, want)
	}
	// validity = ttl - elapsed - drift
	now := start.Add(300 * time.Millisecond)
	if got, want := d.Sub(now), 10*time.Second-300*time.Millisecond-102*time.Millisecond; got != want {
		t.Fatalf("validity = %v, want %v", got, want)
	}
	// A wall-clock step does not move a deadline measured on the monotonic clock.
	stepped := start.Add(time.Hour).Round(0) // wall-clock only reading far ahead
	if d.Before(start) || !d.Before(stepped) {
		t.Fatalf("deadline %v out of order with start %v / stepped %v", d, start, stepped)
	}
}

func TestRealClock(t *testing.T) {
	before := time.Now()
	if now := clock.Real.Now(); now.Before(before) {
		t.Fatalf("Real.Now() = %v went backwards from %v", now, before)
	}
	tm := clock.Real.NewTimer(time.Millisecond)
	<-tm.C
	fired := make(chan struct{})
	clock.Real.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
}
