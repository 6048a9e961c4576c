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
