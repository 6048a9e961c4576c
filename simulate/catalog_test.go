package simulate_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/simulate"
)

// seeds are the seeds every scenario runs with; SIMULATE_SEEDS=n runs n of them.
func seeds(t *testing.T) []uint64 {
	n := 3
	if testing.Short() {
		n = 1
	}
	if s := os.Getenv("SIMULATE_SEEDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	var out []uint64
	for i := range n {
		out = append(out, uint64(1000+i))
	}
	return out
}

// Every scenario of the catalog, under synctest, with three seeds: a safe scenario shows no
// violation over at least its Sections critical sections (2,000 but for the primitives', the
// slow nodes' and the election's rows); a violation scenario catches one in every seed. With
// -short (make test's -race pass) each runs one seed and the safe ones sell the default stock;
// make catalog runs the full length without -race.
func TestCatalog(t *testing.T) {
	for _, sc := range simulate.Catalog() {
		t.Run(sc.Name, func(t *testing.T) {
			// The runs are CPU-bound. With -short they run one at a time, so that under go test
			// ./... they do not starve the real-time tests of other packages running beside
			// them; the full catalog (make test's last step) runs alone and uses every core.
			if !testing.Short() {
				t.Parallel()
			}
			ss := seeds(t)
			stock, want := 0, sc.Sections
			if want == 0 {
				want = 2000
			}
			if sc.Expect == simulate.Safe && !testing.Short() {
				stock = (want + len(ss) - 1) / len(ss)
			}
			sections := 0
			for _, seed := range ss {
				synctest.Test(t, func(t *testing.T) {
					res := simulate.Run(context.Background(), sc, simulate.Options{Seed: seed, Stock: stock})
					sections += res.Acquisitions
					if !res.OK {
						t.Errorf("seed %d: expected %s, observed %s (violations %d, lost %d, orders %d/%d, acquisitions %d) %s\n%v",
							seed, res.Expected, res.Observed, res.Violations, res.LostUpdates, res.Orders, res.Stock, res.Acquisitions, res.Note, res.Schedule)
					}
					t.Logf("seed %d: %s, %d sections, %d violations, %v elapsed, no holder for %v at most, %.1f acquisitions/s",
						seed, res.Observed, res.Acquisitions, res.Violations, res.Elapsed, res.NoHolderMax, res.AcquisitionRate)
				})
			}
			if sc.Expect == simulate.Safe && !testing.Short() && sections < want {
				t.Errorf("%d critical sections, want at least %d", sections, want)
			}
		})
	}
}

// realRows are the scenarios make test runs on real servers too: no faults, a node restarting
// empty, the same beside a node whose clock is an hour behind (fencing), a node clock jumping
// past the TTL (libfaketime), a paused holder whose stale write
// the fenced store refuses, two slow nodes, losing replies or not, through the proxies (at
// their MinScale, 0.2), the election's four rows (at theirs, 0.2 too), and the order form's two
// rows: a node restarting empty under this library's mark, a failover under the seed's token.
var realRows = []string{"no-faults", "restart-data-lost", "clock-behind-restart-fenced", "partition-clock-jump", "pause-after-acquire-fenced",
	"two-slow-nodes", "two-slow-nodes-drops",
	"elect-leader-partitioned", "elect-leader-paused", "elect-clock-jump", "elect-resign-contention",
	"duplicate-submission", "check-and-delete-failover"}

// The same verdicts on redis-server processes with real faults, in real time (a 500 ms TTL, or
// 2 s in the rows whose MinScale is 0.2), and no server left running afterwards.
//
// Real time under -race on a busy machine could make a holder overshoot its validity and give
// up before the fault lands, so -short (make test's -race pass) skips it and make test runs it
// in a pass of its own without -race. A run whose fault still missed its window (the machine
// ran a client too late for it) is run again with the next seed, twice at most, as the
// command does, and the test logs it.
func TestCatalogReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: make test runs it without -race")
	}
	b := simulate.RequireReal(t)
	for _, name := range realRows {
		scs, err := simulate.Match(name)
		if err != nil || len(scs) != 1 {
			t.Fatalf("no scenario %s: %d scenarios, %v", name, len(scs), err)
		}
		t.Run(name, func(t *testing.T) {
			for _, seed := range seeds(t) {
				res := simulate.Run(context.Background(), scs[0], simulate.Options{Seed: seed, Scale: 0.05, Backend: b, Retries: 2})
				for _, m := range res.Missed {
					t.Logf("%s", simulate.MissLine(m))
				}
				if !res.OK || res.Backend != "real" {
					t.Errorf("seed %d on %s: expected %s, observed %s (violations %d, lost %d, orders %d/%d, acquisitions %d) %s\n%v",
						res.Seed, res.Backend, res.Expected, res.Observed, res.Violations, res.LostUpdates, res.Orders, res.Stock, res.Acquisitions, res.Note, res.Schedule)
				}
				t.Logf("seed %d: %s, %d sections, %d violations, %v elapsed, no holder for %v at most, %.1f acquisitions/s",
					res.Seed, res.Observed, res.Acquisitions, res.Violations, res.Elapsed, res.NoHolderMax, res.AcquisitionRate)
			}
		})
	}
	if left := redistest.ServerChildren(); len(left) > 0 {
		t.Errorf("redis-server processes left running: %v", left)
	}
}

// A row that real servers cannot reproduce says why, and does not fail the run.
func TestNotOnReal(t *testing.T) {
	sc := simulate.Scenario{Name: "cluster-only", Expect: simulate.Violation, NotOnReal: "needs a Redis Cluster"}
	res := simulate.Run(context.Background(), sc, simulate.Options{Backend: simulate.Real{}})
	if res.Observed != simulate.VerdictNotReproducible || !res.OK || res.Note != sc.NotOnReal || res.Backend != "real" {
		t.Fatalf("got %s, ok %v, note %q on %s", res.Observed, res.OK, res.Note, res.Backend)
	}
	var table strings.Builder
	simulate.WriteTable(&table, []simulate.Result{res})
	if !strings.Contains(table.String(), "not reproducible on real: needs a Redis Cluster") {
		t.Errorf("the table does not say why:\n%s", table.String())
	}
}
