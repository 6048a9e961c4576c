package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// groupWriter is a command whose child process writes a line to $OUT every 20 ms: the leader
// prints its pid and the writer's, then waits.
const groupWriter = `echo "leader $$"; (while :; do echo x >> "$OUT"; sleep 0.02; done) & echo "writer $!"; echo ready; wait`

// SIGKILL of redlock exec takes its command's whole process group along: the command and the
// child that writes stop at once, and once another exec has the key nothing more is written.
func TestExecKilledTakesItsCommandAlong(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	out := filepath.Join(t.TempDir(), "lines")
	env := []string{"OUT=" + out}
	a := startWith(t, nil, env, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", "2s", "--", "sh", "-c", groupWriter)
	waitLine(t, a.stdout, "ready")
	leader, writer := pidOf(t, a.stdout.String(), "leader"), pidOf(t, a.stdout.String(), "writer")
	a.cmd.Process.Signal(syscall.SIGKILL)
	waitGone(t, "after SIGKILL of redlock exec (stderr: "+a.stderr.String()+")", leader, writer)

	// B gets the key when A's ttl has run out.
	b := startWith(t, nil, env, "exec", "--nodes", c.nodes, "--key", "k", "--wait", "30s", "--", "sh", "-c", "echo acquired; sleep 0.5")
	waitLine(t, b.stdout, "acquired")
	size := fileSize(t, out)
	time.Sleep(200 * time.Millisecond) // ten of the writer's periods
	if now := fileSize(t, out); now != size {
		t.Fatalf("lines are still written while B holds the key (%d bytes, then %d)", size, now)
	}
	if code := b.wait(t); code != 0 {
		t.Fatalf("B: exit %d\nstderr: %s", code, b.stderr)
	}
}

// The parent-death signal alone: with the guard process killed along with redlock exec, the
// command still dies with it (Linux).
func TestExecParentDeathSignal(t *testing.T) {
	c := startCluster(t)
	a := startWith(t, nil, nil, "exec", "--nodes", c.nodes, "--key", "k", "--", "sh", "-c", `echo "leader $$"; echo ready; while :; do sleep 0.02; done`)
	waitLine(t, a.stdout, "ready")
	leader := pidOf(t, a.stdout.String(), "leader")
	for _, p := range children(a.cmd.Process.Pid) {
		if p != leader { // the guard
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	waitGone(t, "after SIGKILL of redlock exec and its guard", leader)
}

// On loss, SIGTERM and then SIGKILL go to the command's whole process group: a child that
// ignores SIGTERM is killed after --grace, and one that outlives a leader that obeyed SIGTERM
// is killed when the leader exits.
func TestExecLockLostSignalsTheGroup(t *testing.T) {
	t.Parallel()
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
