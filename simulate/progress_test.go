package simulate

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The progress check fails a run whose lock stood still for more than twice the TTL, or moved
// at less than a sixteenth of its workload's pace, and passes one that kept moving.
func TestNeedProgress(t *testing.T) {
	r := &run{sc: Scenario{}.withDefaults()} // sections of 20-200 ms: a floor of 0.57 a second
	for _, tc := range []struct {
		name string
		res  Result
		want string // in the note; "" for none
	}{
		{"moving", Result{Acquisitions: 60, NoHolderMax: 300 * time.Millisecond, AcquisitionRate: 8}, ""},
		{"one key expired on the way", Result{Acquisitions: 60, NoHolderMax: 11 * time.Second, AcquisitionRate: 2}, ""},
		{"stalled", Result{Acquisitions: 60, NoHolderMax: 21 * time.Second, NoHolderAt: 3 * time.Second, AcquisitionRate: 2},
			"no holder for 21.0s from t=3.0s: the lock stalled"},
		{"barely moving", Result{Acquisitions: 60, NoHolderMax: 10 * time.Second, AcquisitionRate: 0.4},
			"0.40 acquisitions a second, under 0.57"},
		{"too few sections to tell a rate", Result{Acquisitions: 1, NoHolderMax: time.Second}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note := r.needProgress(&tc.res)
			if tc.want == "" && note != "" || !strings.Contains(note, tc.want) {
				t.Fatalf("note %q, want %q", note, tc.want)
			}
		})
	}
}

// On a broken configuration the progress check fails two-slow-nodes: a node timeout (10 ms)
// shorter than the slow nodes' delay (20-80 ms) leaves three nodes to vote, and a retry delay
// of 25-40 s makes a client whose attempt won none of them wait that long. In about half of
// the runs nobody then holds the lock from the start for 27-40 s. A seed does not decide which
// (the library's own random draws are not seeded): the test tries seeds until one shows the
// stall, and needs one among twenty.
func TestProgressCheckCatchesAStall(t *testing.T) {
	scs, _ := Match("two-slow-nodes")
	sc := scs[0]
	slow := sc.setup
	sc.setup = func(r *run) {
		slow(r)
		r.nodeTimeout = r.d(10 * time.Millisecond)
		r.retryMin, r.retryMax = r.d(25*time.Second), r.d(40*time.Second)
	}
	for seed := range uint64(20) {
		var res Result
		synctest.Test(t, func(t *testing.T) { res = Run(context.Background(), sc, Options{Seed: seed, Stock: 10}) })
		if res.Observed != VerdictSafe {
			t.Fatalf("seed %d: observed %s, want safe: the stall must be what fails the run", seed, res.Observed)
		}
		if !res.OK {
			if !strings.Contains(res.Note, "the lock stalled") {
				t.Fatalf("seed %d: not ok, for another reason: %s", seed, res.Note)
			}
			t.Logf("seed %d: %s", seed, res.Note)
			return
		}
		t.Logf("seed %d: ok, no holder for %v at most", seed, res.NoHolderMax)
	}
	t.Fatal("no run of twenty failed the progress check")
}
