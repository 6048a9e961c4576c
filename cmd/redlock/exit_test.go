package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// exec exits within 2 s of its command, whatever the nodes do: here two of three stop (SIGSTOP)
// while the lock is held, or after it was lost, and then the command exits. The release and the
// clean-up after it must not wait for the stopped nodes (asserted: under 4 s; waiting for them
// took the node timeout, or tens of seconds).
func TestExecExitsSoonAfterItsCommand(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lose        bool
		nodeTimeout string
	}{
		{"held", false, "500ms"},
		{"held, long node timeout", false, "10s"},
		{"lost", true, "500ms"},
		{"lost, long node timeout", true, "10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t)
			done := filepath.Join(t.TempDir(), "done")
			script := `trap 'echo got TERM' TERM; echo ready; while [ ! -e "$DONE" ]; do sleep 0.01; done; echo exiting`
			ttl := "30s" // no extension while the test runs
			if tc.lose {
				ttl = "2s" // extended, and found lost, after 0.7 s
			}
			// The race detector sleeps 1 s at exit unless told not to.
			env := []string{"DONE=" + done, "GORACE=atexit_sleep_ms=0"}
			r := startWith(t, nil, env, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", ttl,
				"--grace", "1m", "--node-timeout", tc.nodeTimeout, "--", "sh", "-c", script)
			waitLine(t, r.stdout, "ready")
			if tc.lose {
				for _, cl := range c.clients[:2] {
					if err := cl.Del(context.Background(), "k").Err(); err != nil {
						t.Fatal(err)
					}
				}
				waitLine(t, r.stdout, "got TERM")
			}
			c.servers[0].Pause(t)
			c.servers[1].Pause(t)
			if err := os.WriteFile(done, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			waitLine(t, r.stdout, "exiting")
			start := time.Now()
			code := r.wait(t)
			d := time.Since(start)
			t.Logf("redlock exec exited %v after its command", d.Round(time.Millisecond))
			if d > 4*time.Second {
				t.Fatalf("redlock exec exited %v after its command; want within 2s\nstderr: %s", d.Round(time.Millisecond), r.stderr)
			}
			if code != 0 {
				t.Fatalf("exit %d, want the command's 0\nstderr: %s", code, r.stderr)
			}
		})
	}
}

// elect, as exec, exits within 2 s of its command whatever the nodes do: two of three stop
// while it leads, and the resignation must not wait for them (asserted: under 4 s).
func TestElectExitsSoonAfterItsCommand(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	done := filepath.Join(t.TempDir(), "done")
	script := `echo ready; while [ ! -e "$DONE" ]; do sleep 0.01; done; echo exiting`
	env := []string{"DONE=" + done, "GORACE=atexit_sleep_ms=0"}
	r := startWith(t, nil, env, "elect", "--nodes", c.nodes, "--name", "e", "--value", "v", "--ttl", "30s",
		"--node-timeout", "10s", "--", "sh", "-c", script)
	waitLine(t, r.stdout, "ready")
	c.servers[0].Pause(t)
	c.servers[1].Pause(t)
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitLine(t, r.stdout, "exiting")
	start := time.Now()
	code := r.wait(t)
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("redlock elect exited %v after its command; want within 2s\nstderr: %s", d.Round(time.Millisecond), r.stderr)
	}
	if code != 0 {
		t.Fatalf("exit %d, want the command's 0\nstderr: %s", code, r.stderr)
	}
}
