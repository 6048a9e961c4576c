package simulate

import (
	"fmt"
	"time"
)

// Schedule returns the fault schedule that seed gives sc, without running it.
func Schedule(sc Scenario, seed uint64) []string {
	r := newRun(sc, Options{Seed: seed})
	defer r.closeNodes()
	return r.schedule()
}

// d scales a scenario duration to true time.
func (r *run) d(v time.Duration) time.Duration { return time.Duration(float64(v) * r.scale) }

// since is the scenario time of t.
func (r *run) since(t time.Time) time.Duration {
	return time.Duration(float64(t.Sub(r.start)) / r.scale)
}

// at schedules do at scenario time t, or t after client 1 first holds the lock when called
// from onceHeld.
func (r *run) at(t time.Duration, what string, do func()) {
	r.events = append(r.events, event{at: t, held: r.held, what: what, do: do})
}

// onceHeld makes the events that schedule adds count from client 1's first acquisition, so
// that a fault aimed at the holder hits it however long the acquisition took in real time.
func (r *run) onceHeld(schedule func()) {
	r.held = true
	schedule()
	r.held = false
}

// between draws a scenario duration uniformly from [lo, hi], rounded to 10 ms.
func (r *run) between(lo, hi time.Duration) time.Duration {
	return (lo + time.Duration(r.rng.Int64N(int64(hi-lo)+1))).Round(10 * time.Millisecond)
}

// arm queues p, in scenario time, for client c's next critical section.
func (r *run) arm(c int, p plan) {
	p.work, p.pauseInWork, p.margin = r.d(p.work), r.d(p.pauseInWork), r.d(p.margin)
	p.pauseBefore, p.pauseRelease, p.pauseInUnlock = r.d(p.pauseBefore), r.d(p.pauseRelease), r.d(p.pauseInUnlock)
	r.clients[c].arm(p)
}

func (r *run) schedule() []string {
	var out []string
	for _, e := range r.events {
		if e.held {
			out = append(out, fmt.Sprintf("client 1 holds +%.2fs: %s", e.at.Seconds(), e.what))
		} else {
			out = append(out, fmt.Sprintf("t=%6.2fs %s", e.at.Seconds(), e.what))
		}
	}
	return out
}
