package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/internal/redistest"
)

// A bad flag or argument prints the error and one line pointing at help, not the whole usage
// that would scroll the error away.
func TestBadFlagsPrintOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--colour", "red", "--", "true"}, "redlock exec: flag provided but not defined: -colour\nrun 'redlock exec -h' for usage\n"},
		{[]string{"exec", "--ttl", "soon", "--", "true"}, "redlock exec: invalid value \"soon\" for flag -ttl: parse error\nrun 'redlock exec -h' for usage\n"},
		{[]string{"exec", "--nodes", "redis://127.0.0.1:1", "--key", "k"}, "redlock exec: no command to run (put it after --)\nrun 'redlock exec -h' for usage\n"},
		{[]string{"status", "--colour"}, "redlock status: flag provided but not defined: -colour\nrun 'redlock status -h' for usage\n"},
		{[]string{"status", "--nodes", "redis://127.0.0.1:1", "--key", "k", "extra"}, "redlock status: unexpected arguments [\"extra\"]\nrun 'redlock status -h' for usage\n"},
		{[]string{"elect", "--colour"}, "redlock elect: flag provided but not defined: -colour\nrun 'redlock elect -h' for usage\n"},
		{[]string{"--colour"}, "redlock: flag provided but not defined: -colour\nrun 'redlock -h' for usage\n"},
		{[]string{"nope"}, "redlock: unknown command \"nope\"\nrun 'redlock -h' for usage\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// exec -h and elect -h print the usage on stdout, and it lists every exit status the command
// can return.
func TestHelpListsEveryExitStatus(t *testing.T) {
	for cmd, statuses := range map[string][]int{"exec": execStatuses, "elect": electStatuses} {
		code, stdout, stderr := runCLI(t, cmd, "-h")
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: redlock "+cmd) {
			t.Fatalf("%s: exit %d, stdout:\n%s\nstderr:\n%s", cmd, code, stdout, stderr)
		}
		_, section, _ := strings.Cut(stdout, "Exit status:")
		section, _, _ = strings.Cut(section, "\n\n")
		for _, s := range statuses {
			if !regexp.MustCompile(`(?m)^  ` + strconv.Itoa(s) + `\b`).MatchString(section) {
				t.Errorf("%s: exit status %d is not in the usage's exit statuses:\n%s", cmd, s, section)
			}
		}
		if !strings.Contains(section, "128+n") {
			t.Errorf("%s: the usage does not say 128+n:\n%s", cmd, section)
		}
	}
}

// execStatuses are the exit statuses of redlock exec besides the command's own; electStatuses
// those of redlock elect, 0 for --observe; doctorStatuses all those of redlock doctor.
var (
	execStatuses   = []int{exitUsage, exitSoftware, exitTempFail, exitNoPerm, exitNoExec, exitNotFound}
	electStatuses  = append([]int{0}, execStatuses...)
	doctorStatuses = []int{0, 1, exitUsage, exitTempFail, exitNoPerm}
)

// docs/cli.md lists the same exit statuses as the usage, for exec, elect and doctor, and
// status's.
func TestDocsListTheExitStatuses(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, execPart, _ := strings.Cut(doc, "## `redlock exec`")
	execPart, statusPart, _ := strings.Cut(execPart, "## `redlock status`")
	statusPart, electPart, _ := strings.Cut(statusPart, "## `redlock elect`")
	electPart, doctorPart, _ := strings.Cut(electPart, "## `redlock doctor`")
	row := regexp.MustCompile(`(?m)^\| (\d+)[ |(]`)
	for _, part := range []struct {
		name     string
		text     string
		statuses []int
	}{{"exec", execPart, execStatuses}, {"elect", electPart, electStatuses}, {"doctor", doctorPart, doctorStatuses}} {
		var listed []int
		for _, m := range row.FindAllStringSubmatch(part.text, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatalf("docs/cli.md's %s section: exit status %q: %v", part.name, m[1], err)
			}
			listed = append(listed, n)
		}
		for _, s := range part.statuses {
			if !slices.Contains(listed, s) {
				t.Errorf("docs/cli.md's %s section has no row for exit status %d (rows: %v)", part.name, s, listed)
			}
		}
		for _, n := range listed {
			if !slices.Contains(part.statuses, n) {
				t.Errorf("docs/cli.md lists exit status %d, which %s never returns", n, part.name)
			}
		}
	}
	for _, want := range []string{"| 0 ", "| 1 ", "| 2 "} {
		if !strings.Contains(statusPart, want) {
			t.Errorf("docs/cli.md's status section has no row %q", want)
		}
	}
}

// A ttl the library would refuse (no longer than its clock drift allowance) is a usage error,
// found before any node is asked, like every other bad flag.
func TestExecInvalidTTLIsAUsageError(t *testing.T) {
	for _, ttl := range []string{"1ms", "2ms"} {
		code, stdout, stderr := runCLI(t, "exec", "--nodes", "redis://127.0.0.1:1", "--key", "k", "--ttl", ttl, "--", "true")
		want := fmt.Sprintf("redlock exec: --ttl %s must be longer than the clock drift it allows for", ttl)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, want) || strings.Contains(stderr, "dial") {
			t.Errorf("--ttl %s: exit %d, stderr:\n%s\nwant 2 and %q, no node asked", ttl, code, stderr, want)
		}
	}
}

var onePlural = regexp.MustCompile(`\b1 (nodes|votes)\b|/1 nodes`)

// With one node, every count reads "1 node", never "1 nodes".
func TestOneNodeIsSingular(t *testing.T) {
	s := redistest.StartACL(t, user, password)
	nodes := fmt.Sprintf("redis://%s:%s@%s", user, password, s.Addr)
	var outs []string
	check := func(what string, code, want int, stdout, stderr string, wants ...string) {
		t.Helper()
		if code != want {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", what, code, want, stdout, stderr)
		}
		for _, w := range wants {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: no %q in\nstdout: %s\nstderr: %s", what, w, stdout, stderr)
			}
		}
		outs = append(outs, stdout, stderr)
	}
	code, stdout, stderr := runCmd(t, nil, "status", "--nodes", nodes, "--key", "k")
	check("status", code, 0, stdout, stderr, `key "k" on 1 node, quorum 1`)
	code, stdout, stderr = runCmd(t, nil, "exec", "--nodes", nodes, "--key", "k", "--verbose", "--",
		redlockBinary(t), "status", "--nodes", nodes, "--key", "k")
	check("exec", code, 0, stdout, stderr, `acquired "k" on a quorum of 1 node,`, "verdict: held on a quorum (1/1 node) by")
	wrong := strings.ReplaceAll(nodes, password, "Wrong-Horse")
	code, stdout, stderr = runCmd(t, nil, "exec", "--nodes", wrong, "--key", "k", "--", "true")
	check("exec, refused", code, exitNoPerm, stdout, stderr, "1 of 1 node refused")
	code, stdout, stderr = runCmd(t, nil, "status", "--nodes", wrong, "--key", "k")
	check("status, refused", code, 1, stdout, stderr, "fewer than 1 node answered")
	for _, out := range outs {
		if m := onePlural.FindString(out); m != "" {
			t.Errorf("%q in:\n%s", m, out)
		}
	}
}

// A node that cannot be reached is reported once, not by the pre-flight check and again when
// the lock is not acquired.
func TestExecNodeFailurePrintedOnce(t *testing.T) {
	s := redistest.StartACL(t, user, password)
	a, b := freeLoopbackPort(t), freeLoopbackPort(t)
	for b == a { // the kernel may hand out a port just closed again
		b = freeLoopbackPort(t)
	}
	nodes := fmt.Sprintf("redis://%s:%s@%s,redis://127.0.0.1:%s,redis://127.0.0.1:%s", user, password, s.Addr, a, b)
	code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", nodes, "--key", "k", "--", "echo", "ran")
	if code != exitTempFail || strings.Contains(stdout, "ran") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for i := 1; i <= 2; i++ {
		if n := strings.Count(stderr, fmt.Sprintf("node %d (", i)); n != 1 {
			t.Errorf("node %d is reported %d times, want once:\n%s", i, n, stderr)
		}
		if !strings.Contains(stderr, "connection refused") {
			t.Errorf("node %d: the failure does not say why:\n%s", i, stderr)
		}
	}
}

// rediss:// to servers that speak plain Redis: the TLS handshake can never succeed, which is a
// TLS failure (77, as documented) naming each node, not a lock that was not acquired (75).
func TestExecTLSToAPlainServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	nodes := strings.ReplaceAll(c.nodes, "redis://", "rediss://")
	code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", nodes, "--key", "k", "--wait", "10s", "--", "echo", "ran")
	if code != exitNoPerm || strings.Contains(stdout, "ran") {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitNoPerm, stdout, stderr)
	}
	for i, s := range c.servers {
		want := fmt.Sprintf("node %d (rediss://alice:xxxxx@%s): TLS handshake failed: the server answers in plain text", i, s.Addr)
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	noPassword(t, stdout, stderr)
	if n := c.holders(t, "k"); n != 0 {
		t.Fatalf("%d nodes hold the key", n)
	}
	// status says the same of each node.
	code, stdout, _ = runCmd(t, nil, "status", "--nodes", nodes, "--key", "k")
	if code != 1 || strings.Count(stdout, "refused") != 3 || strings.Count(stdout, "answers in plain text") != 3 {
		t.Fatalf("status: exit %d\n%s", code, stdout)
	}
}

// A key or a prefix the library would refuse is a usage error, found before any node is asked,
// for exec and for status.
func TestBadKeyOrPrefixIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--key", "~redlock:x"}, `key "~redlock:x" starts with "~redlock:"`},
		{[]string{"--key", "k", "--prefix", "{app"}, `key prefix "{app" opens a hash tag it does not close`},
	} {
		for _, cmd := range [][]string{{"exec"}, {"status"}} {
			args := append(append(cmd, "--nodes", "redis://127.0.0.1:1"), tc.flags...)
			if cmd[0] == "exec" {
				args = append(args, "--", "true")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "redlock "+cmd[0]+": ") ||
				!strings.Contains(stderr, tc.want) || strings.Contains(stderr, "dial") {
				t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 2 and %q, no node asked", args, code, stdout, stderr, tc.want)
			}
		}
	}
}
