package simulate_test

import (
	"slices"
	"testing"

	"github.com/quorumlock/redlock/simulate"
)

// The same seed gives the same fault schedule; other seeds give others.
func TestScheduleIsReproducible(t *testing.T) {
	for _, sc := range simulate.Catalog() {
		a, b := simulate.Schedule(sc, 42), simulate.Schedule(sc, 42)
		if !slices.Equal(a, b) {
			t.Errorf("%s: seed 42 gave\n%v\nthen\n%v", sc.Name, a, b)
		}
	}
	sc, err := simulate.Match("crash-majority")
	if err != nil || len(sc) != 1 {
		t.Fatalf("Match(crash-majority): %d scenarios, %v", len(sc), err)
	}
	if slices.Equal(simulate.Schedule(sc[0], 1), simulate.Schedule(sc[0], 2)) {
		t.Error("seeds 1 and 2 gave the same schedule")
	}
}

func TestMatch(t *testing.T) {
	all, err := simulate.Match("*")
	if err != nil || len(all) != len(simulate.Catalog()) {
		t.Fatalf("Match(*) = %d scenarios, %v", len(all), err)
	}
	if _, err := simulate.Match("["); err == nil {
		t.Error("a malformed glob was accepted")
	}
	names := map[string]bool{}
	for _, sc := range all {
		if names[sc.Name] {
			t.Errorf("scenario %q twice", sc.Name)
		}
		names[sc.Name] = true
		if sc.Expect != simulate.Safe && sc.Expect != simulate.Violation {
			t.Errorf("%s: expects %q", sc.Name, sc.Expect)
		}
	}
}
