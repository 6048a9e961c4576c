package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failoverRaw writes a raw.txt of two rounds, each running case 1 and case 8 in processes of
// their own, and parses it. Round 1 meets every target; in round 2 this library's slowest
// fail-over after a crash takes 1.2 s, a resign's p99 25 ms, and two candidates led at once;
// etcd lacks its crash line there (as when its benchmark failed).
func failoverRaw(t *testing.T) (results, []results) {
	t.Helper()
	line := func(after, impl string, p50, p99, maxUS, ttl, twice float64, past bool) string {
		s := fmt.Sprintf("BenchmarkFailover/after=%s/impl=%s-2 \t 1 \t %.0f ns/op \t %g failover-p50-us \t %g failover-p99-us \t %g failover-max-us \t %g failovers/s \t %g two-leaders \t 0 terms-backward \t 0 failed-campaigns \t 0 failed-resigns \t %g ttl-s",
			after, impl, p50*1000, p50, p99, maxUS, 1e6/p50, twice, ttl)
		if past {
			s += " \t 20000 past-validity-min-us \t 90000 past-validity-max-us \t 0 early"
		}
		return s + "\n"
	}
	header := "goos: linux\ngoarch: amd64\npkg: github.com/quorumlock/redlock/bench\n"
	serial := "BenchmarkUncontended/mode=serial/impl=redlock-2 \t 1000 \t 500000 ns/op\n"
	var b strings.Builder
	for round := 1; round <= 2; round++ {
		b.WriteString(header + serial)
		b.WriteString(header)
		if round == 1 {
			b.WriteString(line("resign", "redlock", 3000, 12000, 15000, 10, 0, false))
			b.WriteString(line("resign", "etcd", 12000, 70000, 80000, 10, 0, false))
			b.WriteString(line("crash", "redlock", 1.03e6, 1.06e6, 1.06e6, 1, 0, true))
			b.WriteString(line("crash", "etcd", 1e6, 1.4e6, 1.4e6, 1, 0, false))
		} else {
			b.WriteString(line("resign", "redlock", 4000, 25000, 30000, 10, 1, false))
			b.WriteString(line("resign", "etcd", 12000, 70000, 80000, 10, 0, false))
			b.WriteString(line("crash", "redlock", 1.03e6, 1.2e6, 1.2e6, 1, 0, true))
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

// Each target is judged on every round: one slow round or one overlap misses it though the
// median would pass.
func TestFailoverTargets(t *testing.T) {
	_, runs := failoverRaw(t)
	rounds := failoverRounds(runs)
	if len(rounds) != 2 {
		t.Fatalf("%d rounds of case 8, want 2", len(rounds))
	}
	type verdict struct {
		cells      string
		met, known bool
	}
	got := map[string]verdict{}
	for _, g := range failoverTargets(rounds) {
		got[strings.SplitN(g.what, ":", 2)[0]] = verdict{strings.Join(g.rounds.cells(g.format), " "), g.met, g.known}
	}
	for key, want := range map[string]verdict{
		"after a resign":       {"12.0 ms 25.0 ms", false, true},
		"after a crash":        {"1.060 s 1.200 s", false, true},
		"one leader at a time": {"0 1", false, true},
	} {
		if got[key] != want {
			t.Errorf("%s: got %+v, want %+v", key, got[key], want)
		}
	}

	// Round 1 alone meets all three.
	for _, g := range failoverTargets(rounds[:1]) {
		if !g.met || !g.known {
			t.Errorf("round 1 alone: %s not met", g.what)
		}
	}
}

func TestRenderFailover(t *testing.T) {
	res, runs := failoverRaw(t)
	page := render(res, runs, "rounds: 2\n", "", "", "chart.svg")
	for _, want := range []string{
		"## Targets: leader election fail-over (case 8)",
		"| after a crash: the slowest fail-over | ≤ 1.100 s (the ttl + 100 ms) every round | 1.060 s | 1.200 s | 1.130 s | **missed** |",
		"### 8. Leader election: fail-over after a resign and after a crash, 3 candidates",
		"| resign | etcd | 12.0 ms | 70.0 ms | 80.0 ms | 83.3 | n/a | 0 | 0 | 10 s |",
		"| 2 | crash | redlock | 1.030 s | 1.200 s | 1.200 s | 0.97 | 20.0 ms – 90.0 ms | 0 | 0 | 1 s |",
		"| 1 | crash | etcd | 1.000 s | 1.400 s | 1.400 s | 1.00 | n/a | 0 | 0 | 1 s |",
		"| 2 | crash | etcd | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
