package simulate_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/quorumlock/redlock/simulate"
)

// seeds are the seeds every scenario runs with; SIMULATE_SEEDS=n runs n of them.
func seeds(t *testing.T) []uint64 {
	n := 3
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

// Every scenario of the catalog, under synctest, with at least three seeds: a safe scenario
// shows no violation over at least its Sections critical sections (2,000 but for the
// primitives' rows); a violation scenario catches one in every seed. With -short (make test's -race pass) the safe scenarios sell the default
// stock instead; make test then runs the full catalog without -race.
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
					t.Logf("seed %d: %s, %d sections, %d violations, %v elapsed", seed, res.Observed, res.Acquisitions, res.Violations, res.Elapsed)
				})
			}
			if sc.Expect == simulate.Safe && !testing.Short() && sections < want {
				t.Errorf("%d critical sections, want at least %d", sections, want)
			}
		})
	}
}
