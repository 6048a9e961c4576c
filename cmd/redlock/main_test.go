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
		if code != 2 || stdout != "" || !strings.Contains(stderr, "usage: redlock simulate") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and the usage", args, code, stdout, stderr)
		}
	}
}

func TestSimulateList(t *testing.T) {
	code, stdout, _ := runCLI(t, "simulate", "-list", "-scenario", "seed*")
	if code != 0 || strings.Count(stdout, "\n") != 4 || !strings.Contains(stdout, "seed004-get-del") {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout)
	}
	// Several globs, comma-separated; a scenario matched twice is listed once.
	code, stdout, _ = runCLI(t, "simulate", "-list", "-scenario", "no-faults,seed00*,seed004-get-del")
	if code != 0 || strings.Count(stdout, "\n") != 5 || !strings.HasPrefix(stdout, "no-faults") {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout)
	}
}

// One safe and one violation scenario in real time: the JSON lines carry the fields the
// issue promises, the table names every run, and the timeline and the metrics chart are SVGs.
func TestSimulateJSONAndTimeline(t *testing.T) {
	svg, chart := filepath.Join(t.TempDir(), "run.svg"), filepath.Join(t.TempDir(), "metrics.svg")
	code, stdout, stderr := runCLI(t, "simulate", "-scenario", "no-faults", "-seed", "3", "-runs", "2", "-json", "-timeline", svg, "-metrics", chart)
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
		if got["scenario"] != "no-faults" || got["backend"] != "mini" || got["expected"] != "safe" || got["ok"] != true || got["seed"] != float64(3+i) {
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
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) || bytes.Count(b, []byte("p99</text>")) != 2 || !bytes.Contains(b, []byte("<polyline")) {
		t.Fatalf("metrics chart: %v\n%.300s", err, b)
	}
}

func TestSimulateTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "-scenario", "seed001-*", "-seed", "5")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "scenario ") || !strings.Contains(stdout, "seed001-single-node") || !strings.Contains(stdout, "violation") {
		t.Fatalf("table:\n%s", stdout)
	}
	if !strings.Contains(stderr, "node A: restarts empty") {
		t.Errorf("the fault schedule is not printed:\n%s", stderr)
	}
}
