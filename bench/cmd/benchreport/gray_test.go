package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grayRaw writes a raw.txt of two rounds, each running case 1 and case 6 in processes of
// their own, and parses it. In round 2 this library stalls under slow+drops, and redsync
// lacks a line there (as when its benchmark failed).
func grayRaw(t *testing.T) (results, []results) {
	t.Helper()
	line := func(faults, impl string, acq, noHolderUS, share float64) string {
		return fmt.Sprintf("BenchmarkGrayFailure/faults=%s/impl=%s-2 \t 1 \t %.0f ns/op \t %g acq/s \t %g no-holder-max-us \t %g min-share\n",
			faults, impl, 1e9/max(acq, 0.25), acq, noHolderUS, share)
	}
	header := "goos: linux\ngoarch: amd64\npkg: github.com/quorumlock/redlock/bench\n"
	serial := "BenchmarkUncontended/mode=serial/impl=redlock-2 \t 1000 \t 500000 ns/op\n"
	var b strings.Builder
	for round := 1; round <= 2; round++ {
		b.WriteString(header + serial)
		b.WriteString(header)
		b.WriteString(line("none", "redlock", 1000, 50e3, 1))
		b.WriteString(line("none", "redsync", 900, 200e3, 0.4))
		b.WriteString(line("slow", "redlock", 600, 100e3, 0.9))
		b.WriteString(line("slow", "redsync", 12, 400e3, 0.2))
		if round == 1 {
			b.WriteString(line("slow+drops", "redlock", 500, 1.5e6, 0.8))
			b.WriteString(line("slow+drops", "redsync", 10, 500e3, 0))
		} else {
			b.WriteString(line("slow+drops", "redlock", 2, 2.4e6, 0))
		}
	}
	path := filepath.Join(t.TempDir(), "raw.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, runs, err := parseRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	return res, runs
}

func TestParseRawRuns(t *testing.T) {
	res, runs := grayRaw(t)
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4 (two cases, two rounds)", len(runs))
	}
	if got := res.rounds(caseGrayFaults("slow"), ours); got != 2 {
		t.Fatalf("all runs together: %d samples, want 2", got)
	}
	rounds := grayRounds(runs)
	if len(rounds) != 2 {
		t.Fatalf("%d rounds of case 6, want 2", len(rounds))
	}
	if v, _ := rounds[1].median(caseGrayFaults("slow+drops"), ours, "acq/s"); v != 2 {
		t.Fatalf("round 2, slow+drops: %v acquisitions/s, want 2", v)
	}
}

// Each target takes its ratios within a round; a stalled round misses the every-round
// targets though the median would pass, and a round without redsync's figure is n/a.
func TestGrayTargets(t *testing.T) {
	_, runs := grayRaw(t)
	type verdict struct {
		cells      string
		met, known bool
	}
	got := map[string]verdict{}
	for _, g := range grayTargets(grayRounds(runs)) {
		got[g.faults+": "+g.what] = verdict{strings.Join(g.rounds.cells(g.format), " "), g.met, g.known}
	}
	for key, want := range map[string]verdict{
		"slow: acquisitions/s vs no faults in the same round":               {"0.60× 0.60×", true, true},
		"slow: acquisitions/s vs redsync in the same setup and round":       {"50.00× 50.00×", true, true},
		"slow: longest time with no holder":                                 {"100.0 ms 100.0 ms", true, true},
		"slow: every Client's share of a fair share (the least)":            {"0.90 0.90", true, true},
		"slow+drops: acquisitions/s vs no faults in the same round":         {"0.50× 0.002×", false, true},
		"slow+drops: acquisitions/s vs redsync in the same setup and round": {"50.00× n/a", true, true},
		"slow+drops: longest time with no holder":                           {"1.50 s 2.40 s", false, true},
		"slow+drops: every Client's share of a fair share (the least)":      {"0.80 0.00", false, true},
	} {
		if got[key] != want {
			t.Errorf("%s: got %+v, want %+v", key, got[key], want)
		}
	}
}

func TestRenderGray(t *testing.T) {
	res, runs := grayRaw(t)
	page := render(res, runs, "rounds: 2\n", "", "", "chart.svg")
	for _, want := range []string{
		"## Targets: two of five nodes slow or losing replies (case 6)",
		"| slow+drops | longest time with no holder | ≤ 2 s (2 × ttl) every round |",
		"#### 6. Round by round, slow, and 2 % of those replies lost",
		"| 2 | redlock | 2.00 | 0.002× | n/a |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
