package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/simulate"
)

func TestSimulateRealMissingServer(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "-backend", "real", "-redis-server", "/nonexistent/redis-server", "-scenario", "no-faults")
	if code != 2 || stdout != "" || !strings.Contains(stderr, simulate.InstallHint) || !strings.HasPrefix(stderr, "redlock simulate: the real backend") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and the install line, prefixed once", code, stdout, stderr)
	}
}

// One run on real servers: its JSON line names the backend, and no server is left running.
func TestSimulateReal(t *testing.T) {
	// Not parallel: it counts every redis-server this process started.
	redistest.Require(t)
	code, stdout, stderr := runCLI(t, "simulate", "-backend", "real", "-scenario", "no-faults", "-seed", "3", "-json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["backend"] != "real" || got["ok"] != true {
		t.Errorf("JSON: %s", stdout)
	}
	if left := redistest.ServerChildren(); len(left) > 0 {
		t.Errorf("redis-server processes left running: %v", left)
	}
}

// Interrupted (as by Ctrl-C) in the middle of runs on real servers, the command stops them all
// and says so.
func TestSimulateRealInterrupted(t *testing.T) {
	// Not parallel: it counts every redis-server this process started.
	redistest.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"simulate", "-backend", "real", "-scenario", "get-*-release", "-seed", "1"}, &out, &errOut)
	}()
	// Wait until the servers run, then interrupt: both scenarios take seconds.
	for deadline := time.Now().Add(10 * time.Second); len(redistest.ServerChildren()) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	cancel()
	if code := <-done; code != 1 || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	if left := redistest.ServerChildren(); len(left) > 0 {
		t.Errorf("redis-server processes left running: %v", left)
	}
}

// The first line says how long the TTL lasts in the scenarios that run at a larger scale of
// their own than -scale, and names them; not when -scale is larger.
func TestSimulateSlowerScenarios(t *testing.T) {
	scs, err := simulate.Match("two-slow-nodes*")
	if err != nil || len(scs) != 2 {
		t.Fatalf("%d scenarios, %v", len(scs), err)
	}
	c := simulateConfig{scenarios: scs, scale: 0.05}
	if got, want := c.slower(), " (2s in two-slow-nodes and two-slow-nodes-drops, whose least scale is larger)"; got != want {
		t.Errorf("slower() = %q, want %q", got, want)
	}
	c.scale = 0.5
	if got := c.slower(); got != "" {
		t.Errorf("at -scale 0.5, slower() = %q, want none", got)
	}
}

// -retries must not be negative; a run that was retried says so on stderr under its line,
// above its schedule.
func TestSimulateRetries(t *testing.T) {
	if code, _, stderr := runCLI(t, "simulate", "-retries", "-1"); code != 2 || !strings.HasPrefix(stderr, "redlock simulate: -retries -1: want 0 or more\n") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	var out bytes.Buffer
	p := &progress{w: &out, total: 1}
	p.report(simulate.Result{
		Scenario: "node-rate-beyond", Expected: simulate.Violation, Observed: simulate.VerdictViolated, OK: true, Seed: 8,
		Missed:   []simulate.Miss{{Seed: 7, Scale: 0.05, Why: "the fault missed its window: none came"}},
		Schedule: []string{"t=  0.00s node A: clock rate 1.4"},
	}, time.Second)
	want := "[1/1] node-rate-beyond: violation, as expected (1s)\n" +
		"        seed 7 at scale 0.05: the fault missed its window: none came; retried with seed 8 at scale 0.1\n" +
		"        t=  0.00s node A: clock rate 1.4\n"
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
