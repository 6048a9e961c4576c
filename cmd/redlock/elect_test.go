package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
)

// leaderCommand is what elect runs in these tests: it appends "start WHO TERM" to $LOG when it
// begins to lead, prints "pid PID" and "leading TERM", runs until $DONE exists, and then
// appends "end WHO TERM".
const leaderCommand = `echo "start $WHO $REDLOCK_TERM" >> "$LOG"; echo "pid $$"; echo "leading $REDLOCK_TERM"; ` +
	`while [ ! -e "$DONE" ]; do sleep 0.02; done; echo "end $WHO $REDLOCK_TERM" >> "$LOG"`

// candidate starts redlock elect in election "e" as who, with value who, running leaderCommand;
// it returns the process and the file that ends its command.
func candidate(t *testing.T, c *cluster, log, who string, flags ...string) (*proc, string) {
	t.Helper()
	done := filepath.Join(t.TempDir(), "done-"+who)
	args := append([]string{"elect", "--nodes", c.nodes, "--name", "e", "--value", who}, flags...)
	r := startWith(t, nil, []string{"LOG=" + log, "DONE=" + done, "WHO=" + who}, append(args, "--", "sh", "-c", leaderCommand)...)
	return r, done
}

// leading waits up to d for the line "leading TERM" of r and returns TERM.
func leading(t *testing.T, r *proc, d time.Duration) uint64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^leading (\d+)$`)
	deadline := time.After(d)
	for {
		if m := re.FindStringSubmatch(r.stdout.String()); m != nil {
			term, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil || term == 0 {
				t.Fatalf("REDLOCK_TERM %q: want a term number", m[1])
			}
			return term
		}
		select {
		case <-r.stdout.added:
		case <-deadline:
			t.Fatalf("not leading after %v\nstdout: %s\nstderr: %s", d, r.stdout, r.stderr)
		}
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// inLine reports whether some node has a candidate waiting in election "e"'s line.
func (c *cluster) inLine(t *testing.T) bool {
	t.Helper()
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.clients {
		if n, _ := cl.ZCard(context.Background(), names.Election("e").Queue).Result(); n > 0 {
			return true
		}
	}
	return false
}

// Two candidates: one runs its command at a time; the second, waiting in line, leads as soon
// as the first's command exits (the first resigns: the term is 2 minutes, and the test gives
// the hand-over 1), with a larger REDLOCK_TERM. status --election shows the leader, then none.
func TestElectOneLeaderAtATimeAndResignHandsOn(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	log := filepath.Join(t.TempDir(), "log")
	a, doneA := candidate(t, c, log, "a", "--ttl", "2m")
	termA := leading(t, a, time.Minute)

	var l leaderJSON
	code, stdout, stderr := runCmd(t, nil, "status", "--nodes", c.nodes, "--election", "e", "-json")
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || code != 0 || l.Value != "a" || l.Term != termA || time.Until(l.Until) <= 0 {
		t.Fatalf("status --election -json: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	code, stdout, _ = runCmd(t, nil, "status", "--nodes", c.nodes, "--election", "e")
	if want := `leader "a" term ` + strconv.FormatUint(termA, 10) + ` until `; code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "left)") {
		t.Fatalf("status --election: exit %d, want %q in\n%s", code, want, stdout)
	}

	b, doneB := candidate(t, c, log, "b", "--ttl", "2m", "--wait", "2m")
	redistest.Eventually(t, "b waits in the election's line", func() bool { return c.inLine(t) })
	touch(t, doneA)
	if code := a.wait(t); code != 0 {
		t.Fatalf("a: exit %d\nstderr: %s", code, a.stderr)
	}
	if termB := leading(t, b, time.Minute); termB <= termA {
		t.Fatalf("REDLOCK_TERM %d after %d: want larger", termB, termA)
	}
	touch(t, doneB)
	if code := b.wait(t); code != 0 {
		t.Fatalf("b: exit %d\nstderr: %s", code, b.stderr)
	}
	got := readLines(t, log)
	if len(got) != 4 || !strings.HasPrefix(got[0], "start a ") || !strings.HasPrefix(got[1], "end a ") ||
		!strings.HasPrefix(got[2], "start b ") || !strings.HasPrefix(got[3], "end b ") {
		t.Fatalf("the commands overlapped or did not run:\n%s", strings.Join(got, "\n"))
	}
	code, stdout, _ = runCmd(t, nil, "status", "--nodes", c.nodes, "--election", "e")
	if code != 0 || !strings.HasSuffix(stdout, "\nno leader\n") {
		t.Fatalf("status --election after both: exit %d\n%s", code, stdout)
	}
}

// SIGKILL of the leader's elect: its command dies with it (guard, parent-death signal), and the
// other candidate leads once the term's ttl (2 s) has run out; the test gives it 10 s.
func TestElectLeaderKilledIsFollowedWithinItsTTL(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	log := filepath.Join(t.TempDir(), "log")
	a, _ := candidate(t, c, log, "a", "--ttl", "2s")
	termA := leading(t, a, time.Minute)
	cmdA := pidOf(t, a.stdout.String(), "pid")
	b, doneB := candidate(t, c, log, "b", "--ttl", "2s", "--wait", "2m")
	redistest.Eventually(t, "b waits in the election's line", func() bool { return c.inLine(t) })
	a.cmd.Process.Signal(syscall.SIGKILL)
	waitGone(t, "a's command after SIGKILL of its elect", cmdA)
	if termB := leading(t, b, 10*time.Second); termB <= termA {
		t.Fatalf("REDLOCK_TERM %d after %d: want larger", termB, termA)
	}
	touch(t, doneB)
	if code := b.wait(t); code != 0 {
		t.Fatalf("b: exit %d\nstderr: %s", code, b.stderr)
	}
	if got := readLines(t, log); len(got) != 3 || !strings.HasPrefix(got[1], "start b ") {
		t.Fatalf("log:\n%s", strings.Join(got, "\n"))
	}
}

// elect --observe prints the state now, then every change: no leader, the leader, no leader
// again once it resigned; as JSON with -json. A signal ends it, with status 0.
func TestElectObserve(t *testing.T) {
	c := startCluster(t)
	js := startWith(t, nil, nil, "elect", "--nodes", c.nodes, "--name", "e", "--observe", "-json")
	text := startWith(t, nil, nil, "elect", "--nodes", c.nodes, "--name", "e", "--observe")
	states := func(r *proc) []leaderJSON {
		var out []leaderJSON
		sc := bufio.NewScanner(strings.NewReader(r.stdout.String()))
		for sc.Scan() {
			var l leaderJSON
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("not a JSON line: %q", sc.Text())
			}
			out = append(out, l)
		}
		return out
	}
	waitStates := func(n int) []leaderJSON {
		deadline := time.After(time.Minute)
		for {
			if s := states(js); len(s) >= n {
				return s
			}
			select {
			case <-js.stdout.added:
			case <-deadline:
				t.Fatalf("fewer than %d states after a minute:\n%s\nstderr: %s", n, js.stdout, js.stderr)
			}
		}
	}
	if s := waitStates(1); s[0].Value != "" || s[0].Term != 0 {
		t.Fatalf("first state %+v, want no leader", s[0])
	}
	text.stdout.waitFor(t, "no leader")
	l, done := candidate(t, c, filepath.Join(t.TempDir(), "log"), "10.0.0.7:8080")
	term := leading(t, l, time.Minute)
	if s := waitStates(2); s[1].Value != "10.0.0.7:8080" || s[1].Term != term || s[1].Until.IsZero() {
		t.Fatalf("second state %+v, want the leader in term %d", s[1], term)
	}
	touch(t, done)
	if s := waitStates(3); s[2].Value != "" || s[2].Term != 0 || len(s) != 3 {
		t.Fatalf("states %+v, want no leader last", s)
	}
	re := regexp.MustCompile(`^no leader\nleader "10\.0\.0\.7:8080" term ` + strconv.FormatUint(term, 10) + ` until \d\d:\d\d:\d\d\.\d\d\d\nno leader\n$`)
	for deadline := time.Now().Add(time.Minute); !re.MatchString(text.stdout.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the text observer printed:\n%s", text.stdout)
		}
	}
	for _, r := range []*proc{js, text} {
		r.cmd.Process.Signal(syscall.SIGINT)
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d after SIGINT, want 0\nstderr: %s", code, r.stderr)
		}
	}
}

// The term's keys vanish from two of three nodes while the command runs: the next renewal
// finds the term lost, and the command's group gets SIGTERM, as under exec.
func TestElectTermLostSignalsTheCommand(t *testing.T) {
	c := startCluster(t)
	r := startWith(t, nil, nil, "elect", "--nodes", c.nodes, "--name", "e", "--value", "v", "--ttl", "1s",
		"--grace", "1m", "--node-timeout", "300ms", "--", "sh", "-c", termChild)
	waitLine(t, r.stdout, "ready")
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.clients[:2] {
		if err := cl.Del(context.Background(), names.Election("e").Lock).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code := r.wait(t); code != 42 {
		t.Fatalf("exit %d, want the command's 42\nstdout: %s\nstderr: %s", code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`redlock elect: term \d+ of "e" lost; sending SIGTERM, SIGKILL in 1m0s`).MatchString(r.stderr.String()) {
		t.Fatalf("stderr does not tell the loss:\n%s", r.stderr)
	}
}

// While another candidate leads: one attempt, or --wait, ends in 75 and runs nothing; a signal
// while campaigning ends it in 128+n.
func TestElectNotElected(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	term := c.lead(t, "other")
	defer term.Resign(ctx)
	for _, tc := range []struct{ wait, want string }{
		{"0s", `redlock elect: not elected in "e"; "other" leads, term ` + strconv.FormatUint(term.Term(), 10) + "\n"},
		{"300ms", `redlock elect: not elected in "e" within 300ms; "other" leads, term ` + strconv.FormatUint(term.Term(), 10) + "\n"},
	} {
		code, stdout, stderr := runCmd(t, nil, "elect", "--nodes", c.nodes, "--name", "e", "--value", "v", "--wait", tc.wait, "--", "echo", "ran")
		if code != exitTempFail || stdout != "" || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("--wait %s: exit %d, stdout %q, stderr:\n%s\nwant 75 and %q", tc.wait, code, stdout, stderr, tc.want)
		}
	}
	r := startWith(t, nil, nil, "elect", "--nodes", c.nodes, "--name", "e", "--value", "v", "--wait", "1m", "--verbose", "--", "echo", "ran")
	waitLine(t, r.stderr, `redlock elect: campaigning up to 1m0s in "e"`)
	r.cmd.Process.Signal(syscall.SIGINT)
	if code := r.wait(t); code != 128+int(syscall.SIGINT) || strings.Contains(r.stdout.String(), "ran") {
		t.Fatalf("exit %d, want %d, nothing run\nstdout: %s\nstderr: %s", code, 128+int(syscall.SIGINT), r.stdout, r.stderr)
	}
}

// Bad input is a usage error in one line, before any node is asked.
func TestElectUsageErrors(t *testing.T) {
	nodes := []string{"elect", "--nodes", "redis://127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--value", "v", "--", "true"}, "--name is required"},
		{[]string{"--name", "", "--value", "v", "--", "true"}, "--name is required"},
		{[]string{"--name", "~redlock:e", "--value", "v", "--", "true"}, `--name: key "~redlock:e" starts with "~redlock:"`},
		{[]string{"--name", "e", "--", "true"}, "--value is required, unless --observe"},
		{[]string{"--name", "e", "--value", "", "--", "true"}, "--value is required, unless --observe"},
		{[]string{"--name", strings.Repeat("n", 1025), "--value", "v", "--", "true"}, "--name: key of 1025 bytes is too long: the limit is 1024 bytes"},
		{[]string{"--name", "e", "--value", strings.Repeat("v", 64<<10+1), "--", "true"}, "--value: value of 65537 bytes is too long: the limit is 65536 bytes"},
		{[]string{"--name", "e", "--value", "v", "--ttl", "2ms", "--", "true"}, "--ttl 2ms must be longer than the clock drift it allows for"},
		{[]string{"--name", "e", "--value", "v", "--ttl", "-1s", "--", "true"}, "--ttl -1s must be a positive whole number of milliseconds"},
		{[]string{"--name", "e", "--value", "v"}, "no command to run (put it after --)"},
		{[]string{"--name", "e", "--value", "v", "-json", "--", "true"}, "-json goes with --observe"},
		{[]string{"--name", "e", "--observe", "--value", "v"}, "--observe takes no --value"},
		{[]string{"--name", "e", "--observe", "--", "true"}, "--observe runs no command"},
		{[]string{"--name", "e", "--observe", "--ttl", "1500us"}, "--ttl 1.5ms must be a positive whole number"},
	} {
		code, stdout, stderr := runCLI(t, append(nodes, tc.args...)...)
		want := "redlock elect: " + tc.want
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "\nrun 'redlock elect -h' for usage\n") ||
			strings.Count(stderr, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 2 and %q in one line", tc.args, code, stdout, stderr, want)
		}
	}
}

// status --election: too few nodes answer, exit 1 and nothing on stdout; a bad name or both
// --key and --election are usage errors.
func TestStatusElectionUnknown(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	c.servers[0].Pause(t)
	c.servers[1].Pause(t)
	for _, flags := range [][]string{nil, {"-json"}} {
		args := append([]string{"status", "--nodes", c.nodes, "--election", "e", "--node-timeout", "200ms"}, flags...)
		code, stdout, stderr := runCmd(t, nil, args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, `election "e": fewer than 2 nodes answered; the leader is unknown`) {
			t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s", flags, code, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--election", "e", "--key", "k"}, "give --key or --election, not both"},
		{[]string{"--election", "~redlock:e"}, "--election: key"},
		{[]string{"--election", "e", "--ttl", "1ms"}, "--ttl 1ms must be longer"},
	} {
		code, _, stderr := runCLI(t, append([]string{"status", "--nodes", c.nodes}, tc.args...)...)
		if code != exitUsage || !strings.HasPrefix(stderr, "redlock status: "+tc.want) {
			t.Errorf("%q: exit %d, stderr:\n%s", tc.args, code, stderr)
		}
	}
}
