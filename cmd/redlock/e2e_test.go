package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// The redlock command, built with -race by the first end-to-end test that runs it (redlockBinary),
// into binaryDir; a selection of tests that runs none of them (go test -run Example) builds nothing.
var (
	buildBinary sync.Once
	binaryDir   string
	binary      string
	buildErr    error
)

// redlockBinary returns the path of the built command, building it on the first call; it fails
// t when the build fails.
func redlockBinary(t *testing.T) string {
	t.Helper()
	buildBinary.Do(func() {
		if binaryDir, buildErr = os.MkdirTemp("", "redlock-e2e"); buildErr != nil {
			return
		}
		binary = filepath.Join(binaryDir, "redlock")
		out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building redlock: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	redistest.Quiet()
	// The redlock binary is built with -race, whose runtime otherwise sleeps a second at every
	// exit; the tests run it hundreds of times.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	user     = "alice"
	password = "Corr3ct-Horse"
)

// cluster is three redis-server processes that serve only user with password, a node list for
// the command, go-redis clients logged in to each, and a library client over them.
type cluster struct {
	servers []*redistest.Server
	nodes   string // --nodes
	clients []redis.UniversalClient
	locker  *redlock.Client
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{}
	var urls []string
	for range 3 {
		s := redistest.StartACL(t, user, password)
		c.servers = append(c.servers, s)
		urls = append(urls, fmt.Sprintf("redis://%s:%s@%s", user, password, s.Addr))
		c.clients = append(c.clients, redistest.ACLClient(t, s.Addr, user, password))
	}
	c.nodes = strings.Join(urls, ",")
	var err error
	if c.locker, err = redlock.New(c.clients, redlock.WithNodeTimeout(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.locker.Close() })
	return c
}

// holders returns how many nodes hold key.
func (c *cluster) holders(t *testing.T, key string) int {
	t.Helper()
	n := 0
	for i, cl := range c.clients {
		got, err := cl.Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		n += int(got)
	}
	return n
}

// A proc is the command started in the background.
type proc struct {
	cmd    *exec.Cmd
	stdout *lineBuffer
	stderr *lineBuffer
	done   chan struct{}
	code   int
}

// start runs the command with args; the test fails if it has not ended after a minute.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	r := &proc{cmd: exec.Command(redlockBinary(t), args...), stdout: newLineBuffer(), stderr: newLineBuffer(), done: make(chan struct{})}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		err := r.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil:
			r.code = -1
		}
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait returns the exit status, failing t when the command hangs.
func (r *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(time.Minute):
		r.cmd.Process.Kill()
		<-r.done
		args := strings.ReplaceAll(strings.Join(r.cmd.Args[1:], " "), password, "xxxxx")
		t.Fatalf("redlock %s still running after a minute\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
		return -1
	}
}

// runCmd runs the command to its end.
func runCmd(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := start(t, env, args...)
	code = r.wait(t)
	return code, r.stdout.String(), r.stderr.String()
}

// lineBuffer collects output and lets a test wait for a line.
type lineBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	added chan struct{} // receives after each write, dropping when full
}

func newLineBuffer() *lineBuffer { return &lineBuffer{added: make(chan struct{}, 1)} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.added <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until a line of the output is line.
func (b *lineBuffer) waitFor(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		sc := bufio.NewScanner(strings.NewReader(b.String()))
		for sc.Scan() {
			if sc.Text() == line {
				return
			}
		}
		select {
		case <-b.added:
		case <-deadline:
			t.Fatalf("no line %q after a minute; output so far: %s", line, b)
		}
	}
}

var _ io.Writer = (*lineBuffer)(nil)

// noPassword fails t when the password shows anywhere in out.
func noPassword(t *testing.T, outs ...string) {
	t.Helper()
	for _, out := range outs {
		if strings.Contains(out, password) {
			t.Fatalf("the password shows in the output:\n%s", out)
		}
	}
}

func TestExecPassesExitStatusAndReleases(t *testing.T) {
	c := startCluster(t)
	// The command sees the lock held while it runs (on 2 or 3 nodes: Lock returns at a quorum,
	// and the third SET may still be in flight under load).
	script := fmt.Sprintf(`%s status --key job | grep -q "verdict: held on a quorum ([23]/3 nodes)" || exit 99; exit 7`, redlockBinary(t))
	code, stdout, stderr := runCmd(t, []string{"REDLOCK_NODES=" + c.nodes}, "exec", "--key", "job", "--ttl", "5s", "--", "sh", "-c", script)
	if code != 7 {
		t.Fatalf("exit status %d, want the command's 7\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if n := c.holders(t, "job"); n != 0 {
		t.Fatalf("%d nodes still hold the key after the command ended", n)
	}
	noPassword(t, stdout, stderr)

	code, _, stderr = runCmd(t, nil, "exec", "--nodes", c.nodes, "--key", "job", "--", "true")
	if code != 0 {
		t.Fatalf("exit status %d for true, stderr: %s", code, stderr)
	}
}

// A command that runs for several ttls keeps the lock all along: exec extends it (the
// library's KeepAlive), and the command still finds it held, under its own token, at the end.
func TestExecKeepsTheLockPastItsTTL(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	script := fmt.Sprintf(`sleep 5; %s status --key k | grep -q "verdict: held on a quorum ([23]/3 nodes) by $(echo "$REDLOCK_TOKEN" | cut -c1-8)" || exit 99`, redlockBinary(t))
	code, stdout, stderr := runCmd(t, []string{"REDLOCK_NODES=" + c.nodes}, "exec", "--key", "k", "--ttl", "2s", "--", "sh", "-c", script)
	if code != 0 || strings.Contains(stderr, "lost") {
		t.Fatalf("exit status %d, want 0: the lock was not kept for 5s with a ttl of 2s\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestExecNotAcquiredWithinWait(t *testing.T) {
	c := startCluster(t)
	held, err := c.locker.TryLock(context.Background(), "deploy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	marker := filepath.Join(t.TempDir(), "ran")
	for _, wait := range []string{"0s", "300ms"} {
		code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", c.nodes, "--key", "deploy", "--wait", wait, "--", "touch", marker)
		if code != 75 {
			t.Fatalf("--wait %s: exit status %d, want 75\nstderr: %s", wait, code, stderr)
		}
		if !strings.Contains(stderr, `lock "deploy" not acquired`) {
			t.Errorf("--wait %s: stderr does not say so:\n%s", wait, stderr)
		}
		// One attempt hears from a quorum at least; the last attempt of a wait may be cut short.
		if wait == "0s" && strings.Count(stderr, "held by another owner") < 2 { // a quorum said no
			t.Errorf("--wait %s: stderr does not say why:\n%s", wait, stderr)
		}
		noPassword(t, stdout, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran without the lock")
	}
	if got, err := c.clients[0].Get(context.Background(), "deploy").Result(); err != nil || got != held.Token() {
		t.Fatalf("the holder's key was touched: %q (%v)", got, err)
	}
}

func TestExecUsageErrors(t *testing.T) {
	good := "redis://alice:" + password + "@127.0.0.1:1"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no nodes", nil, []string{"exec", "--key", "k", "--", "true"}, "no nodes"},
		{"no key", nil, []string{"exec", "--nodes", good, "--", "true"}, "--key is required"},
		{"no command", nil, []string{"exec", "--nodes", good, "--key", "k"}, "no command"},
		{"unknown flag", nil, []string{"exec", "--colour", "red", "--", "true"}, "flag provided but not defined"},
		{"bad ttl", nil, []string{"exec", "--nodes", good, "--key", "k", "--ttl", "-1s", "--", "true"}, "--ttl"},
		{"sub-ms ttl", nil, []string{"exec", "--nodes", good, "--key", "k", "--ttl", "1500us", "--", "true"}, "--ttl"},
		{"bad duration", nil, []string{"exec", "--nodes", good, "--key", "k", "--wait", "soon", "--", "true"}, "invalid value"},
		{"bad scheme", nil, []string{"exec", "--nodes", "http://alice:" + password + "@h:1", "--key", "k", "--", "true"}, "node 0 (http://alice:xxxxx@h:1): want a redis://"},
		{"bad URL", nil, []string{"exec", "--nodes", good + ",redis://alice:" + password + "@h:port", "--key", "k", "--", "true"}, "node 1 (redis://alice:xxxxx@h:port): not a valid URL"},
		{"bad URL from env", []string{"REDLOCK_NODES=redis://alice:" + password + "@h:1/x"}, []string{"exec", "--key", "k", "--", "true"}, "invalid database number"},
		{"same node twice", nil, []string{"exec", "--nodes", good + "," + good, "--key", "k", "--", "true"}, "the same server as node 0"},
		{"status bad URL", nil, []string{"status", "--nodes", "redis://alice:" + password + "@h:port", "--key", "k"}, "not a valid URL"},
		{"status no key", nil, []string{"status", "--nodes", good}, "--key is required"},
		{"unknown command", nil, []string{"lock"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, append([]string{"REDLOCK_NODES="}, tc.env...), tc.args...)
			if code != 2 {
				t.Fatalf("exit status %d, want 2\nstderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr does not contain %q:\n%s", tc.want, stderr)
			}
			noPassword(t, stdout, stderr)
		})
	}
}

func TestExecCommandNotFound(t *testing.T) {
	c := startCluster(t)
	code, _, stderr := runCmd(t, nil, "exec", "--nodes", c.nodes, "--key", "k", "--", "./no-such-command")
	if code != 127 {
		t.Fatalf("exit status %d, want 127\nstderr: %s", code, stderr)
	}
	if n := c.holders(t, "k"); n != 0 {
		t.Fatalf("%d nodes still hold the key", n)
	}
}

// A child that handles SIGTERM: prints when it gets it, exits 42. It says "ready" once its
// trap is set.
const termChild = `trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done`

func TestExecPassesSignalsOn(t *testing.T) {
	c := startCluster(t)
	r := start(t, nil, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", "5s", "--", "sh", "-c", termChild)
	r.stdout.waitFor(t, "ready")
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(t); code != 42 {
		t.Fatalf("exit status %d, want 42\nstdout: %s\nstderr: %s", code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout.String(), "got TERM") {
		t.Fatalf("the command did not get SIGTERM: %s", r.stdout)
	}
	if n := c.holders(t, "k"); n != 0 {
		t.Fatalf("%d nodes still hold the key", n)
	}
}

// A signal while waiting for the lock ends the wait, and runs nothing.
func TestExecSignalWhileWaiting(t *testing.T) {
	c := startCluster(t)
	held, err := c.locker.TryLock(context.Background(), "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(context.Background())
	r := start(t, nil, "exec", "--nodes", c.nodes, "--key", "k", "--wait", "1m", "--verbose", "--", "echo", "ran")
	r.stderr.waitFor(t, `redlock exec: waiting up to 1m0s for "k"`)
	r.cmd.Process.Signal(syscall.SIGINT)
	if code := r.wait(t); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit status %d, want %d\nstderr: %s", code, 128+int(syscall.SIGINT), r.stderr)
	}
	if strings.Contains(r.stdout.String(), "ran") {
		t.Fatal("the command ran")
	}
}

// The key vanishes from two of three nodes while the command runs: the next extension fails,
// the command gets SIGTERM, ignores it, and is killed after --grace.
func TestExecLockLostKillsAfterGrace(t *testing.T) {
	c := startCluster(t)
	child := `trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done`
	r := start(t, nil, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", "1s", "--grace", "300ms", "--node-timeout", "300ms", "--", "sh", "-c", child)
	r.stdout.waitFor(t, "ready")
	for _, cl := range c.clients[:2] {
		if err := cl.Del(context.Background(), "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code := r.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %d, want %d (SIGKILL)\nstdout: %s\nstderr: %s", code, 128+int(syscall.SIGKILL), r.stdout, r.stderr)
	}
	stderr := r.stderr.String()
	if !strings.Contains(stderr, `lock "k" lost; sending SIGTERM`) || !strings.Contains(stderr, "sending SIGKILL") {
		t.Fatalf("stderr does not tell the loss and the kill:\n%s", stderr)
	}
	r.stdout.waitFor(t, "got TERM")
	// Released on the node that still held it.
	if n := c.holders(t, "k"); n != 0 {
		t.Fatalf("%d nodes still hold the key", n)
	}
}

// Two of three nodes stop answering (SIGSTOP): the lock cannot be extended, the command gets
// SIGTERM and ends by itself within the grace period, with its own status.
func TestExecLockLostToStoppedNodes(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	r := start(t, nil, "exec", "--nodes", c.nodes, "--key", "k", "--ttl", "1s", "--grace", "1m", "--node-timeout", "200ms", "--", "sh", "-c", termChild)
	r.stdout.waitFor(t, "ready")
	c.servers[0].Pause(t)
	c.servers[1].Pause(t)
	if code := r.wait(t); code != 42 {
		t.Fatalf("exit status %d, want 42\nstdout: %s\nstderr: %s", code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr.String(), `lock "k" lost`) {
		t.Fatalf("stderr does not tell the loss:\n%s", r.stderr)
	}
	if n, err := c.clients[2].Exists(context.Background(), "k").Result(); err != nil || n != 0 {
		t.Fatalf("the node still answering holds the key: %d, %v", n, err)
	}
}

func TestExecWrongPassword(t *testing.T) {
	c := startCluster(t)
	wrong := strings.ReplaceAll(c.nodes, password, "Wrong-Horse")
	for _, nodes := range []string{wrong, strings.ReplaceAll(c.nodes, "alice:"+password+"@", "")} {
		code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", nodes, "--key", "k", "--wait", "1m", "--", "echo", "ran")
		if code != 77 {
			t.Fatalf("exit status %d, want 77\nstderr: %s", code, stderr)
		}
		for i, s := range c.servers {
			if !strings.Contains(stderr, fmt.Sprintf("node %d (", i)) || !strings.Contains(stderr, s.Addr) {
				t.Errorf("stderr does not name node %d:\n%s", i, stderr)
			}
		}
		if !strings.Contains(stderr, "WRONGPASS") && !strings.Contains(stderr, "NOAUTH") {
			t.Errorf("stderr does not say the credentials were refused:\n%s", stderr)
		}
		if strings.Contains(stdout, "ran") {
			t.Error("the command ran")
		}
		noPassword(t, stdout, stderr)
		if strings.Contains(stderr, "Wrong-Horse") {
			t.Fatalf("the wrong password shows:\n%s", stderr)
		}
	}
	// One node of three refusing still leaves a quorum: the command runs, with a warning.
	urls := strings.Split(c.nodes, ",")
	urls[1] = strings.Split(wrong, ",")[1]
	code, stdout, stderr := runCmd(t, nil, "exec", "--nodes", strings.Join(urls, ","), "--key", "k", "--", "echo", "ran")
	if code != 0 || !strings.Contains(stdout, "ran") || !strings.Contains(stderr, "node 1 (") {
		t.Fatalf("exit status %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	ctx := context.Background()
	env := []string{"REDLOCK_NODES=" + c.nodes}

	code, stdout, stderr := runCmd(t, env, "status", "--key", "k")
	if code != 0 || !strings.Contains(stdout, "verdict: free") {
		t.Fatalf("free: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	l, err := c.locker.TryLock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCmd(t, env, "status", "--key", "k")
	short := l.Token()[:8] + "..."
	if code != 0 || !strings.Contains(stdout, "verdict: held on a quorum (3/3 nodes) by "+short) {
		t.Fatalf("held: exit %d\n%s", code, stdout)
	}
	if strings.Contains(stdout, l.Token()) {
		t.Fatalf("the whole token shows:\n%s", stdout)
	}
	noPassword(t, stdout)

	var st lockStatus
	code, stdout, _ = runCmd(t, env, "status", "--key", "k", "-json")
	if err := jsonDecode(stdout, &st); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if st.Verdict != verdictHeld || st.Holder != short || st.Votes != 3 || len(st.Nodes) != 3 {
		t.Fatalf("json: %+v", st)
	}
	for _, n := range st.Nodes {
		if !n.Reachable || !n.Held || n.TTLMillis <= 0 || n.TTLMillis > 60000 || n.Holder != short {
			t.Fatalf("json node: %+v", n)
		}
	}

	// A release handed the key to a waiting call on every node: handed, not held by a token.
	l.Unlock(ctx)
	for _, node := range c.clients {
		node.Set(ctx, "k", "someclientid.7", time.Minute)
	}
	code, stdout, _ = runCmd(t, env, "status", "--key", "k")
	if code != 0 || !strings.Contains(stdout, "verdict: handed on a quorum (3/3 nodes) to the waiting call someclie...") ||
		strings.Count(stdout, "handed") != 4 {
		t.Fatalf("handed: exit %d\n%s", code, stdout)
	}

	// Two owners, one node each, the third free: split.
	c.clients[2].Del(ctx, "k")
	c.clients[0].Set(ctx, "k", "token-of-one-owner", time.Minute)
	c.clients[1].Set(ctx, "k", "token-of-another-owner", 0)
	code, stdout, _ = runCmd(t, env, "status", "--key", "k")
	if code != 0 || !strings.Contains(stdout, "verdict: split") || !strings.Contains(stdout, "token-of...") ||
		!strings.Contains(stdout, "none") {
		t.Fatalf("split: exit %d\n%s", code, stdout)
	}

	// Two of three nodes silent: unknown, exit 1, naming the silent nodes.
	c.clients[0].Del(ctx, "k")
	c.clients[1].Del(ctx, "k")
	c.servers[0].Pause(t)
	c.servers[2].Pause(t)
	code, stdout, _ = runCmd(t, env, "status", "--key", "k", "--node-timeout", "200ms")
	if code != 1 || !strings.Contains(stdout, "verdict: unknown") ||
		!strings.Contains(stdout, "node 0 (redis://alice:xxxxx@"+c.servers[0].Addr+")") ||
		!strings.Contains(stdout, "node 2 (redis://alice:xxxxx@"+c.servers[2].Addr+")") {
		t.Fatalf("unknown: exit %d\n%s", code, stdout)
	}
	noPassword(t, stdout)
}

func TestStatusWrongPassword(t *testing.T) {
	c := startCluster(t)
	wrong := strings.ReplaceAll(c.nodes, password, "Wrong-Horse")
	code, stdout, stderr := runCmd(t, nil, "status", "--nodes", wrong, "--key", "k")
	if code != 1 || strings.Count(stdout, "refused") != 3 || strings.Count(stdout, "WRONGPASS") != 3 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "Wrong-Horse") {
		t.Fatal("the wrong password shows")
	}
}

func jsonDecode(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// With --fence the command finds the lock's fencing token in REDLOCK_FENCE, larger at every
// acquisition; without it, REDLOCK_FENCE is not set, even when the caller had it.
func TestExecFence(t *testing.T) {
	c := startCluster(t)
	env := []string{"REDLOCK_NODES=" + c.nodes, "REDLOCK_FENCE=1"}
	var last uint64
	for i := range 3 {
		code, stdout, stderr := runCmd(t, env, "exec", "--key", "k", "--fence", "--", "sh", "-c", `echo "$REDLOCK_FENCE"`)
		if code != 0 {
			t.Fatalf("exit %d\nstderr: %s", code, stderr)
		}
		f, err := strconv.ParseUint(strings.TrimSpace(stdout), 10, 64)
		if err != nil || f <= last {
			t.Fatalf("run %d: REDLOCK_FENCE=%q after %d: want a larger token", i, stdout, last)
		}
		last = f
	}
	// status shows the counter on the nodes the last acquisition's round 2 reached: a quorum.
	var st lockStatus
	code, stdout, _ := runCmd(t, env, "status", "--key", "k", "-json")
	if err := jsonDecode(stdout, &st); err != nil || code != 0 {
		t.Fatalf("status: exit %d, %v:\n%s", code, err, stdout)
	}
	at := 0
	for _, n := range st.Nodes {
		if n.Fence == last {
			at++
		}
	}
	if at < st.Quorum {
		t.Fatalf("fencing counter %d on %d nodes, want a quorum:\n%s", last, at, stdout)
	}
	code, stdout, _ = runCmd(t, env, "exec", "--key", "k", "--", "sh", "-c", `echo "fence=${REDLOCK_FENCE-unset}"`)
	if code != 0 || stdout != "fence=unset\n" {
		t.Fatalf("without --fence: exit %d, %q", code, stdout)
	}
}

// The command finds the lock's token in REDLOCK_TOKEN and hands it on: another process (a
// Client of the test) takes the lock over with Resume while the command runs, and extends it.
func TestExecToken(t *testing.T) {
	c := startCluster(t)
	done := filepath.Join(t.TempDir(), "done")
	env := []string{"REDLOCK_NODES=" + c.nodes, "REDLOCK_TOKEN=outer", "DONE=" + done}
	r := start(t, env, "exec", "--key", "k", "--", "sh", "-c",
		`echo "token=$REDLOCK_TOKEN"; while [ ! -e "$DONE" ]; do sleep 0.05; done`)
	var token string
	for deadline := time.Now().Add(time.Minute); token == ""; time.Sleep(10 * time.Millisecond) {
		if out, ok := strings.CutPrefix(r.stdout.String(), "token="); ok && strings.HasSuffix(out, "\n") {
			token = strings.TrimSpace(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no token after a minute; stdout %q, stderr %q", r.stdout, r.stderr)
		}
	}
	if token == "outer" {
		t.Fatal("the command saw the caller's REDLOCK_TOKEN")
	}
	ctx := context.Background()
	l, err := c.locker.Resume(ctx, "k", token, 20*time.Second)
	if err != nil {
		t.Fatalf("Resume with the command's token: %v", err)
	}
	if err := l.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, r.stderr)
	}
}
