package simulate_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quorumlock/redlock/simulate"
)

// catalogResults are results for every scenario of the catalog, each observing what it
// expected, with figures as wide as a run shows: thousands of overlaps, waits of a minute and
// more, and for the election's rows fail-overs of a minute and more.
func catalogResults(seed uint64) []simulate.Result {
	var rs []simulate.Result
	for _, sc := range simulate.Catalog() {
		strategy := sc.Strategy
		if strategy == "" {
			strategy = simulate.Redlock
		}
		res := simulate.Result{
			Scenario: sc.Name, Backend: "mini", Strategy: strategy, Row: sc.Row, Seed: seed,
			Expected: sc.Expect, Observed: simulate.Verdict(sc.Expect), OK: true,
			Violations: 1234, WaitMedian: 12340 * time.Millisecond, WaitMax: 99940 * time.Millisecond,
		}
		if strategy == simulate.Election {
			res.Failovers, res.FailoverMedian, res.FailoverMax = 1234, 36*time.Millisecond, 99940*time.Millisecond
		}
		rs = append(rs, res)
	}
	return rs
}

// The table of the whole catalog fits 100 columns, names its seed once, on a line that says how
// to rerun, and ends with the legend.
func TestWriteTable(t *testing.T) {
	const seed = 8_123_456_789_012_345_678
	var out strings.Builder
	if err := simulate.WriteTable(&out, catalogResults(seed)); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for i, line := range strings.Split(table, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line %d is %d columns:\n%s", i+1, n, line)
		}
	}
	if n := strings.Count(table, "8123456789012345678"); n != 1 {
		t.Errorf("the seed shows %d times, want once", n)
	}
	if !strings.HasPrefix(table, "rerun: redlock simulate -seed 8123456789012345678 -scenario NAME\nscenario ") {
		t.Errorf("the table does not start with the rerun line and the columns:\n%s", table)
	}
	for _, want := range []string{"\nexpected: ", "observed: ", "ok: ", "overlaps: ", "wait (s): ", "in scenario seconds"} {
		if !strings.Contains(table, want) {
			t.Errorf("the legend lacks %q:\n%s", want, table)
		}
	}
	failover := "fail-over: elect-resign-contention: 0.036 s p50, 99.940 s max (1234 hand-overs)"
	if !strings.Contains(strings.Join(strings.Fields(table), " "), failover) {
		t.Errorf("no line %q:\n%s", failover, table)
	}
	row := "get-then-del-release get-then-del violation violation ok 1234 12.3/99.9"
	if !slices.ContainsFunc(strings.Split(table, "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == row }) {
		t.Errorf("no row %q:\n%s", row, table)
	}
}

// Runs of several seeds are grouped by seed, each group under the line that reruns it; a run
// that is not ok says why under the table.
func TestWriteTableSeeds(t *testing.T) {
	rs := append(catalogResults(8)[:2], catalogResults(7)[:2]...)
	rs[3].Observed, rs[3].OK, rs[3].Note = simulate.VerdictInconclusive, false, "sold 3 of 60 in time"
	var out strings.Builder
	if err := simulate.WriteTable(&out, rs); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	seven, eight := strings.Index(table, "-seed 7 "), strings.Index(table, "-seed 8 ")
	if seven < 0 || eight < seven || strings.Count(table, "\nscenario ") != 2 {
		t.Errorf("want a group for seed 7, then one for seed 8, each with its column names:\n%s", table)
	}
	if !strings.Contains(table, "NO") || !strings.Contains(table, "note: crash-minority, -seed 7: sold 3 of 60 in time\n") {
		t.Errorf("the run that is not ok does not say why:\n%s", table)
	}
}

// A run retried after a miss stays in the group of the seed it was asked for, and a note says
// which seed missed, why, and which ran instead.
func TestWriteTableMissed(t *testing.T) {
	rs := catalogResults(7)[:2]
	rs[1].Seed, rs[1].Missed = 8, []simulate.Miss{{Seed: 7, Scale: 0.05, Why: "the fault missed its window: none came"}}
	var out strings.Builder
	if err := simulate.WriteTable(&out, rs); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if strings.Count(table, "rerun: ") != 1 || !strings.Contains(table, "-seed 7 ") {
		t.Errorf("want one group, seed 7's:\n%s", table)
	}
	note := "note: " + rs[1].Scenario + ": seed 7 at scale 0.05: the fault missed its window: none came; retried with seed 8 at scale 0.1"
	if !strings.Contains(strings.Join(strings.Fields(table), " "), note) {
		t.Errorf("no note %q:\n%s", note, table)
	}
}
