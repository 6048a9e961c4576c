package simulate

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A meeting opens with its planned section, counts each member once, and is met at need.
func TestMeeting(t *testing.T) {
	r := &run{scale: 1}
	m := r.meet(3, []int{0, 1, 2}, "clients 1-3 wait for one another")
	other := r.meetAnother(0)
	r.enter(1, nil) // before any planned section: counts for neither
	r.enter(0, m)
	r.enter(3, nil) // not a member of m
	r.enter(0, nil) // client 1 again
	r.enter(1, nil)
	if m.missed() == "" {
		t.Fatal("met with two of three")
	}
	if other.missed() == "" {
		t.Fatal("the meeting of client 1 and another is met, though client 1's section was not planned for it")
	}
	r.enter(2, m)
	if why := m.missed(); why != "" {
		t.Fatalf("not met with all three: %s", why)
	}
	r.enter(0, other)
	r.enter(4, nil)
	if why := other.missed(); why != "" {
		t.Fatalf("client 1 and another: %s", why)
	}
	other.giveUp()
	if why := other.missed(); !strings.Contains(why, "validity had run out") {
		t.Fatalf("gave up: %q", why)
	}
}

// onOddSeeds is restart-data-lost on odd seeds only: on even ones nothing lets a second client
// in while client 1 holds the lock, which waits for one in vain.
var onOddSeeds = Scenario{
	Name: "test-odd", Expect: Violation,
	setup: func(r *run) {
		if r.seed%2 == 1 {
			restartHolderNode(r)
			return
		}
		r.bareMajority(0)
		r.holdForAnother()
	},
}

// A run whose fault missed its window runs again with the next seed, and says so; the retries
// are bounded, and a fault that never lands leaves the row not ok.
func TestMissedWindowRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res := Run(context.Background(), onOddSeeds, Options{Seed: 2, Retries: 2, Stock: 12})
		if !res.OK || res.Seed != 3 || len(res.Missed) != 1 || res.Missed[0].Seed != 2 ||
			!strings.Contains(res.Missed[0].Why, "the fault missed its window: client 1 waits for another client to enter: none came in time") {
			t.Fatalf("ok %v, seed %d, missed %+v, note %q", res.OK, res.Seed, res.Missed, res.Note)
		}
		if line := MissLine(res.Missed[0]); !strings.HasPrefix(line, "seed 2 at scale 1: the fault missed its window") ||
			!strings.HasSuffix(line, "; retried with seed 3 at scale 1") {
			t.Fatalf("miss line: %s", line)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		never := onOddSeeds
		never.setup = func(r *run) { r.bareMajority(0); r.holdForAnother() }
		res := Run(context.Background(), never, Options{Seed: 2, Retries: 2, Stock: 12})
		if res.OK || res.Observed != VerdictSafe || res.Seed != 4 || len(res.Missed) != 2 ||
			!strings.Contains(res.Note, "the fault missed its window") {
			t.Fatalf("ok %v, observed %s, seed %d, missed %+v, note %q", res.OK, res.Observed, res.Seed, res.Missed, res.Note)
		}
	})
}

// A check of pace that fails is a miss only when the machine ran the run late by more than a
// tenth of a scenario second: otherwise the lock was slow, and the verdict stands.
func TestPaceMissNeedsLag(t *testing.T) {
	r := &run{}
	res := &Result{Observed: VerdictSafe, Lag: 90 * time.Millisecond}
	if why := r.miss(res, "the lock stalled"); why != "" {
		t.Fatalf("missed with a lag under a tenth of a second: %s", why)
	}
	res.Lag = 400 * time.Millisecond
	if why := r.miss(res, ""); why != "" {
		t.Fatalf("missed with no check of pace failing: %s", why)
	}
	if why := r.miss(res, "the lock stalled"); !strings.Contains(why, "the machine ran it up to 0.40s of scenario time late (more than 100ms)") {
		t.Fatalf("a failed pace on a late machine: %q", why)
	}
	res.Observed = VerdictInconclusive
	if why := r.miss(res, ""); why == "" {
		t.Fatal("an inconclusive run on a late machine did not miss")
	}
}
