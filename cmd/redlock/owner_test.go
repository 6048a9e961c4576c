package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exec stores --owner with its lock, for Inspect (and redlock status) to show who holds it: by
// default the host's name and exec's pid; --owner "" stores none.
func TestExecOwner(t *testing.T) {
	c := startCluster(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  func(pid int) string
	}{
		{"given", []string{"--owner", "deploy bot"}, func(int) string { return "deploy bot" }},
		{"default", nil, func(pid int) string { return fmt.Sprintf("%s:%d", host, pid) }},
		{"none", []string{"--owner", ""}, func(int) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := filepath.Join(t.TempDir(), "done")
			args := append(append([]string{"exec", "--nodes", c.nodes, "--key", "k"}, tc.flags...),
				"--", "sh", "-c", `echo ready; while [ ! -e "$DONE" ]; do sleep 0.05; done`)
			r := start(t, []string{"DONE=" + done}, args...)
			r.stdout.waitFor(t, "ready")
			in, err := c.locker.Inspect(context.Background(), "k")
			if want := tc.want(r.cmd.Process.Pid); err != nil || !in.Held || in.Owner != want {
				t.Errorf("Inspect: %+v, %v; want held, owner %q", in, err, want)
			}
			if err := os.WriteFile(done, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if code := r.wait(t); code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, r.stderr)
			}
		})
	}
}

// An owner the library refuses is a usage error, found before any node is asked.
func TestExecBadOwnerIsAUsageError(t *testing.T) {
	for _, owner := range []string{"tab\there", strings.Repeat("x", 129), "web,1"} {
		code, stdout, stderr := runCLI(t, "exec", "--nodes", "redis://127.0.0.1:1", "--key", "k", "--owner", owner, "--", "true")
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "redlock exec: --owner: owner ") ||
			strings.Count(stderr, "\n") != 2 || strings.Contains(stderr, "dial") {
			t.Errorf("--owner %q: exit %d, stderr:\n%s\nwant 2, one line, no node asked", owner, code, stderr)
		}
	}
}
