package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	if code, _, stderr := runCLI(t); code != 2 || !strings.Contains(stderr, "usage: redlock") || !strings.Contains(stderr, "simulate") {
		t.Errorf("no arguments: exit %d, stderr %q; want 2 and the usage", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "-h"); code != 0 || !strings.Contains(stdout, "simulate") {
		t.Errorf("-h: exit %d, stdout %q; want 0 and the usage", code, stdout)
	}
}

func TestSimulateBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-runs", "0"},
		{"-seed", "x"},
		{"-scale", "0"},
		{"-scenario", "["},
		{"-scenario", "no-such-scenario"},
		{"extra"},
		{"-backend", "nope"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"simulate"}, args...)...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "redlock simulate: ") ||
			strings.HasPrefix(lines[0], "redlock simulate: simulate:") || lines[1] != "run 'redlock simulate -h' for usage" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, the error and where to find the usage", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "simulate", "-h"); code != 0 || !strings.HasPrefix(stderr, "usage: redlock simulate") {
		t.Errorf("-h: exit %d, stderr %q; want 0 and the usage", code, stderr)
	}
}

func TestSimulateList(t *testing.T) {
	code, stdout, _ := runCLI(t, "simulate", "-list", "-scenario", "get-*")
	if code != 0 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, "get-then-del-release") {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout)
	}
	// Several globs, comma-separated; a scenario matched twice is listed once.
	code, stdout, _ = runCLI(t, "simulate", "-list", "-scenario", "no-faults,get-*,get-then-del-release")
	if code != 0 || strings.Count(stdout, "\n") != 3 || !strings.HasPrefix(stdout, "no-faults") {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout)
	}
}

// simulateSlowly are the flags that let a real-time run of the simulator sell out under -race on
// a busy machine: a small stock, and a scale that gives each node call 60 ms (at the default
// scale, 30 ms calls time out until the run's horizon ends it, inconclusive). These tests are
// about the command's output, not the lock.
var simulateSlowly = []string{"-stock", "12", "-scale", "0.2"}

// Two runs in real time: the JSON lines carry the documented fields, the progress lines name
// each run's seed, and the timeline and the metrics chart are SVGs.
func TestSimulateJSONAndTimeline(t *testing.T) {
	t.Parallel()
	svg, chart := filepath.Join(t.TempDir(), "run.svg"), filepath.Join(t.TempDir(), "metrics.svg")
	args := append([]string{"simulate", "-scenario", "no-faults", "-seed", "3", "-runs", "2", "-json", "-timeline", svg, "-metrics", chart}, simulateSlowly...)
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want 2:\n%s", len(lines), stdout)
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"scenario", "backend", "strategy", "expected", "observed", "violations", "acquisitions", "seed", "ok"} {
			if _, ok := got[field]; !ok {
				t.Errorf("line %d lacks %q: %s", i, field, line)
			}
		}
		// A run that a busy machine ran too late is retried with the next seed; its first
		// seed is then the first of its misses.
		seed := got["seed"]
		if missed, _ := got["missed"].([]any); len(missed) > 0 {
			seed = missed[0].(map[string]any)["seed"]
		}
		if got["scenario"] != "no-faults" || got["backend"] != "mini" || got["expected"] != "safe" || got["ok"] != true || seed != float64(3+i) {
			t.Errorf("line %d: %s", i, line)
		}
	}
	if !strings.Contains(stderr, "seed 3") || !strings.Contains(stderr, "[1/2] no-faults") {
		t.Errorf("stderr lacks the seed or the progress lines:\n%s", stderr)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte("client 3")) {
		t.Fatalf("timeline: %v\n%.200s", err, b)
	}
	b, err = os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) || bytes.Count(b, []byte("p99</text>")) != 1 || bytes.Count(b, []byte(">no-faults</text>")) != 2 {
		t.Fatalf("metrics chart: %v\n%.300s", err, b)
	}
	// The percentiles are drawn: a line through windows in a row that had calls, a dot for a
	// window alone (calls handed on one at a time can land in every other window).
	if !bytes.Contains(b, []byte("<polyline")) && !bytes.Contains(b, []byte("<circle")) {
		t.Fatalf("metrics chart draws no percentile:\n%s", b)
	}
}

// The table: the seed once, on the line that says how to rerun; lines that fit 100 columns; the
// legend; the fault schedule on stderr.
func TestSimulateTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, append([]string{"simulate", "-scenario", "no-faults,single-node-*", "-seed", "424242"}, simulateSlowly...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "rerun: redlock simulate -seed 424242 -scenario NAME\nscenario ") || strings.Count(stdout, "424242") != 1 {
		t.Errorf("want the seed once, in the rerun line above the table:\n%s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if len([]rune(line)) > 100 {
			t.Errorf("%d columns: %s", len([]rune(line)), line)
		}
	}
	if !strings.Contains(stdout, "single-node-restart") || !strings.Contains(stdout, "\nexpected: ") || !strings.Contains(stdout, "\nok: ") {
		t.Errorf("the table lacks its rows or its legend:\n%s", stdout)
	}
	if !strings.Contains(stderr, "node A: restarts empty") {
		t.Errorf("the fault schedule is not printed:\n%s", stderr)
	}
}
