package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
)

// On loss, SIGTERM and then SIGKILL go to the command's whole process group: a child that
// ignores SIGTERM is killed after --grace, and one that outlives a leader that obeyed SIGTERM
// is killed when the leader exits.
func TestExecLockLostSignalsTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader string // the leader's TERM trap
		code   int
	}{
		{"leader ignores TERM", `trap "" TERM`, 128 + int(syscall.SIGKILL)},
		{"leader exits on TERM", `trap "exit 3" TERM`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t)
			out := filepath.Join(t.TempDir(), "lines")
			script := tc.leader + `; echo "leader $$"; (trap "" TERM; while :; do echo x >> "$OUT"; sleep 0.02; done) & echo "writer $!"; echo ready; while :; do wait; done`
			r := startWith(t, nil, []string{"OUT=" + out}, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", "1s", "--grace", "300ms", "--node-timeout", "300ms", "--", "sh", "-c", script)
			waitLine(t, r.stdout, "ready")
			leader, writer := pidOf(t, r.stdout.String(), "leader"), pidOf(t, r.stdout.String(), "writer")
			for _, cl := range c.clients[:2] {
				if err := cl.Del(context.Background(), "k").Err(); err != nil {
					t.Fatal(err)
				}
			}
			waitGone(t, "after the loss", leader, writer)
			if code := r.wait(t); code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tc.code, r.stderr)
			}
		})
	}
}

// Signals sent to redlock exec go to the command's whole process group.
func TestExecForwardsSignalsToTheGroup(t *testing.T) {
	c := startCluster(t)
	script := `(trap 'echo "child got TERM"; exit 0' TERM; echo "child ready"; while :; do sleep 0.02; done) & trap 'echo "leader got TERM"' TERM; echo ready; wait; wait`
	r := startWith(t, nil, nil, "exec", "--nodes", c.nodes, "--key", "k", "--", "sh", "-c", script)
	waitLine(t, r.stdout, "ready")
	waitLine(t, r.stdout, "child ready")
	r.cmd.Process.Signal(syscall.SIGTERM)
	waitLine(t, r.stdout, "leader got TERM")
	waitLine(t, r.stdout, "child got TERM")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, r.stderr)
	}
}
