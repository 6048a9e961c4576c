package simulate

import (
	"context"
	"math/rand/v2"
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

// The progress check fails a run of two-slow-nodes in which the lock stood still: for its
// first three TTLs, a third node is slow too and the node timeout (10 ms) is shorter than the
// slow nodes' delay (20-80 ms), so that two nodes are left to vote where three are needed.
// Then the third node heals and the lock moves again: the run is safe, and only the progress
// check can fail it.
func TestProgressCheckCatchesAStall(t *testing.T) {
	t.Parallel()
	scs, err := Match("two-slow-nodes")
	if err != nil || len(scs) != 1 {
		t.Fatalf("Match(two-slow-nodes): %d scenarios, %v", len(scs), err)
	}
	sc := scs[0]
	sc.setup = func(r *run) {
		r.nodeTimeout = r.d(10 * time.Millisecond)
		f := replyFault{Min: r.d(slowReplies[0]), Max: r.d(slowReplies[1])}
		for n := range r.nodes[:3] {
			for _, c := range r.clients {
				c.links[n].setReplies(f, rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64())))
			}
		}
		r.at(3*TTL, "node 3 heals", func() {
			for _, c := range r.clients {
				c.links[2].heal()
			}
		})
		r.check = r.needProgress
	}
	var res Result
	synctest.Test(t, func(t *testing.T) { res = Run(context.Background(), sc, Options{Seed: 1, Stock: 10}) })
	if res.Observed != VerdictSafe {
		t.Fatalf("observed %s, want safe: the stall must be what fails the run", res.Observed)
	}
	if res.OK || !strings.Contains(res.Note, "the lock stalled") {
		t.Fatalf("ok %v, note %q: the stall went unseen (%d acquisitions, no holder for %v at most)",
			res.OK, res.Note, res.Acquisitions, res.NoHolderMax)
	}
	t.Log(res.Note)
}
