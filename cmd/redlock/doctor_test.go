package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// aclURLs starts a redis-server serving only user with password for each set of options, and
// returns their URLs with the password.
func aclURLs(t *testing.T, args ...[]string) []string {
	t.Helper()
	var urls []string
	for _, a := range args {
		s := redistest.StartACL(t, user, password, a...)
		urls = append(urls, fmt.Sprintf("redis://%s:%s@%s", user, password, s.Addr))
	}
	return urls
}

var aof = []string{"--appendonly", "yes", "--appendfsync", "always"}

// A failed check: the table names it, exit 1; -json gives one finding a line; the password
// never shows. redlock status then prints the doctor's summary; without a failure, exit 0 and
// status says nothing of it.
func TestDoctor(t *testing.T) {
	t.Parallel()
	urls := aclURLs(t, aof, append(slices.Clone(aof), "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"), aof)
	nodes := strings.Join(urls, ",")
	// A node timeout that a busy machine keeps: only latency depends on the machine's load.
	code, stdout, stderr := runCLI(t, "doctor", "--nodes", nodes, "--for", "300ms", "--node-timeout", "2s")
	if code != 1 || !strings.Contains(stdout, "NODE  CHECK        VERDICT  DETAIL") ||
		!strings.Contains(stdout, "node 1: redis://alice:xxxxx@") || !strings.Contains(stdout, "\n1     eviction     fail     maxmemory 10.00M with allkeys-lru") ||
		!strings.Contains(stdout, "\n-     quorum       ok       3 of 3 nodes answered") || !strings.Contains(stdout, "1 of 28 checks failed (node 1 eviction)") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	noPassword(t, stdout, stderr)

	code, stdout, _ = runCLI(t, "doctor", "--nodes", nodes, "--for", "300ms", "--node-timeout", "2s", "-json")
	lines := 0
	for sc := bufio.NewScanner(strings.NewReader(stdout)); sc.Scan(); lines++ {
		var f finding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		checks := []string{"role", "write", "identity", "persistence", "eviction", "clock", "latency", "commands", "acl"}
		switch {
		case !slices.Contains([]string{"ok", "warn", "fail"}, f.Verdict):
			t.Errorf("verdict %q in %q", f.Verdict, sc.Text())
		case f.Node == -1 && (f.Check != "quorum" || f.Addr != ""):
			t.Errorf("a line of the whole set: %q", sc.Text())
		case f.Node >= 0 && (!slices.Contains(checks, f.Check) || f.Addr != redact(urls[f.Node])):
			t.Errorf("a node's line: %q", sc.Text())
		case f.Check == "eviction" && (f.Node == 1) != (f.Verdict == "fail"):
			t.Errorf("eviction: %q", sc.Text())
		}
	}
	if code != 1 || lines != 28 {
		t.Errorf("-json: exit %d, %d lines:\n%s", code, lines, stdout)
	}
	noPassword(t, stdout)

	code, _, stderr = runCLI(t, "status", "--nodes", nodes, "--key", "k", "--node-timeout", "2s")
	if code != 0 || !strings.Contains(stderr, "doctor: 1 of 28 checks failed (node 1 eviction); ") {
		t.Errorf("status: exit %d, stderr %q", code, stderr)
	}
	healthy := strings.Join([]string{urls[0], urls[2], aclURLs(t, aof)[0]}, ",")
	if code, stdout, _ := runCLI(t, "doctor", "--nodes", healthy, "--for", "300ms", "--node-timeout", "2s"); code != 0 {
		t.Errorf("healthy: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "status", "--nodes", healthy, "--key", "k", "--node-timeout", "2s"); code != 0 || stderr != "" {
		t.Errorf("status of healthy nodes: exit %d, stderr %q", code, stderr)
	}
}

// Credentials that leave no quorum: 77, the refusals named; too few nodes answering: 75, the
// silent nodes named; bad flags: 2.
func TestDoctorExitStatus(t *testing.T) {
	t.Parallel()
	urls := aclURLs(t, nil, nil, nil)
	wrong := strings.ReplaceAll(strings.Join(urls[:2], ","), password, "Wrong-Horse") + "," + urls[2]
	code, stdout, stderr := runCLI(t, "doctor", "--nodes", wrong, "--for", "100ms", "--node-timeout", "2s")
	if code != exitNoPerm || strings.Count(stdout, "reach        fail     no answer: WRONGPASS") != 2 {
		t.Errorf("wrong password: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "Wrong-Horse") {
		t.Error("the wrong password shows")
	}
	silent := urls[0] + ",redis://127.0.0.1:1,redis://127.0.0.1:2"
	code, stdout, stderr = runCLI(t, "doctor", "--nodes", silent, "--for", "100ms", "--node-timeout", "2s")
	if code != exitTempFail || !strings.Contains(stdout, "\n2     reach        fail     no answer: dial tcp 127.0.0.1:2") ||
		!strings.Contains(stdout, "1 of 3 nodes answered, fewer than a quorum (2)") {
		t.Errorf("two nodes silent: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"--for", "0s"}, {"--for", "x"}, {"extra"}, {"--votes", "3"}} {
		code, _, stderr := runCLI(t, append([]string{"doctor", "--nodes", urls[0]}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "run 'redlock doctor -h' for usage") {
			t.Errorf("doctor %q: exit %d, %s", args, code, stderr)
		}
	}
	code, stdout, _ = runCLI(t, "doctor", "-h")
	if code != 0 || !strings.HasPrefix(stdout, "usage: redlock doctor") {
		t.Errorf("-h: exit %d\n%s", code, stdout)
	}
	_, section, _ := strings.Cut(stdout, "Exit status:")
	for _, s := range doctorStatuses {
		if !regexp.MustCompile(`(?m)^  ` + strconv.Itoa(s) + `\b`).MatchString(section) {
			t.Errorf("exit status %d is not in the usage's exit statuses:\n%s", s, section)
		}
	}
}

// With --cluster and --votes, each vote is checked on the master that serves it, and the
// cluster's coverage of the slots on the whole set.
func TestDoctorOnVotes(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	withUser(t, cl)
	url := fmt.Sprintf("redis+cluster://%s:%s@%s", user, password, cl.Masters[0].Addr)
	code, stdout, stderr := runCLI(t, "doctor", "--cluster", url, "--votes", "3", "--for", "200ms", "--node-timeout", "2s")
	if code != 0 || !strings.Contains(stdout, "node 0: vote {") || !strings.Contains(stdout, "3 nodes, quorum 2") ||
		!strings.Contains(stdout, "\n0     identity     ok       its slot is served by ") ||
		!strings.Contains(stdout, "\n-     identity     ok       the cluster serves all 16384 slots") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	noPassword(t, stdout, stderr)
}

// With a node stopped (SIGSTOP: it takes connections and answers nothing) or killed (its
// connections refused), redlock doctor returns within the bound that doctor.Check documents,
// the longer of --for and twice --node-timeout, with a second's slack for a busy machine: the
// PING that tells refused credentials apart runs beside the checks, not a node timeout before.
func TestDoctorKeepsTheBoundOfCheck(t *testing.T) {
	t.Parallel()
	const d, nodeTimeout, slack = 4 * time.Second, 2 * time.Second, time.Second
	bound := max(d, 2*nodeTimeout)
	for _, how := range []string{"stopped", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ss := redistest.StartN(t, 3)
			if how == "stopped" {
				ss[2].Pause(t)
			} else {
				ss[2].Kill()
			}
			urls := "redis://" + strings.Join(redistest.Addrs(ss), ",redis://")
			start := time.Now()
			code, stdout, stderr := runCLI(t, "doctor", "--nodes", urls, "--for", d.String(), "--node-timeout", nodeTimeout.String())
			took := time.Since(start)
			t.Logf("took %v, bound %v", took.Round(time.Millisecond), bound)
			if took > bound+slack || code != 1 || !strings.Contains(stdout, "\n2     reach        fail     no answer: ") {
				t.Errorf("took %v (bound %v, slack %v), exit %d\nstdout:\n%s\nstderr:\n%s", took.Round(time.Millisecond), bound, slack, code, stdout, stderr)
			}
		})
	}
}
