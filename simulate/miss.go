package simulate

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Real time cannot be controlled: a busy machine runs a client later than its schedule says,
// by more than a node timeout at times. A run then shows something about the machine instead
// of the lock, in two ways, and Run tries it again:
//
//   - its fault missed its window: a planned section's meeting was not met in time (see
//     meeting.go), or a fault that had to change something changed nothing (no extend failed,
//     no reply was lost);
//   - a check of pace failed (the lock stalled, hand-overs were slow, the stock did not sell
//     out before the horizon) in a run that the machine ran late at some moment by more than
//     lagStep of scenario time: the run's times, in scenario time too, then say how busy the
//     machine was. (A hand-over takes a few wake-ups, each as late as the machine makes it;
//     one delay past the node timeout can leave keys behind that stop the lock for a TTL.)
//
// A run that is not ok for any other reason is not tried again: its verdict stands.

// lagStep is how often, in scenario time, a run checks how late the machine runs it, and the
// most it may run late for the pace of the run to count: the least of the retry delay.
const lagStep = 100 * time.Millisecond

// Run executes sc and checks it. It blocks for the scenario's duration times the scale (or no
// real time at all inside a testing/synctest bubble). A run that missed (see above) is run
// again with the next seed at twice the scale, so that the machine's delays weigh half as much
// in scenario time, at most o.Retries times; Result.Missed lists the runs that missed.
func Run(ctx context.Context, sc Scenario, o Options) Result {
	var missed []Miss
	for {
		res := runOnce(ctx, sc, o)
		if res.miss == "" || len(missed) == o.Retries || ctx.Err() != nil {
			if res.miss != "" {
				res.Note = strings.TrimPrefix(res.Note+"; "+res.miss, "; ")
			}
			res.Missed = missed
			return res
		}
		missed = append(missed, Miss{Seed: o.Seed, Scale: res.Scale, Why: res.miss})
		o.Seed++
		o.Scale = min(1, 2*res.Scale)
	}
}

// A Miss is a run that showed the machine rather than the lock, run again (Options.Retries).
type Miss struct {
	Seed  uint64  `json:"seed"`
	Scale float64 `json:"scale"`
	Why   string  `json:"why"`
}

// MissLine says that the run of m missed, why, and how it was run again.
func MissLine(m Miss) string {
	return fmt.Sprintf("seed %d at scale %g: %s; retried with seed %d at scale %g",
		m.Seed, m.Scale, m.Why, m.Seed+1, min(1, 2*m.Scale))
}

// watchLag measures how late the machine runs the run, until done: it sleeps in steps and
// keeps the longest delay past a step's end. Inside a synctest bubble the delay is always 0.
func (r *run) watchLag(done <-chan struct{}) {
	step := r.d(lagStep)
	t := time.NewTimer(step)
	defer t.Stop()
	for due := time.Now().Add(step); ; due = time.Now().Add(step) {
		select {
		case <-done:
			return
		case <-t.C:
		}
		r.lag = max(r.lag, time.Since(due))
		t.Reset(step)
	}
}

// judge says whether res is ok: it observed what it expected, and the scenario's checks passed
// (check's, then pace's); when it is not, after a run of elapsed, it says how it missed, if
// it did.
func (r *run) judge(res *Result, elapsed time.Duration) {
	res.OK = string(res.Observed) == string(res.Expected)
	if res.OK && r.check != nil {
		res.Note = r.check(res)
		res.OK = res.Note == ""
	}
	pace := ""
	if res.OK && r.pace != nil {
		pace = r.pace(res)
		res.Note, res.OK = pace, pace == ""
	}
	if !res.OK && elapsed > 0 {
		res.miss = r.miss(res, pace)
	}
}

// miss says how the run, not ok, missed, or "" when its verdict stands. pace is the note of
// its check of pace, "" when that passed or did not run.
func (r *run) miss(res *Result, pace string) string {
	missed := r.missed
	if missed == nil {
		missed = r.missedMeeting
	}
	if why := missed(res); why != "" {
		return "the fault missed its window: " + why
	}
	if (pace != "" || res.Observed == VerdictInconclusive) && res.Lag > lagStep {
		return fmt.Sprintf("the machine ran it up to %.2fs of scenario time late (more than %v): its pace shows the machine, not the lock",
			res.Lag.Seconds(), lagStep)
	}
	return ""
}
