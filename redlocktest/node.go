package redlocktest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock/doctor"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A NewNode returns a node over a client of its own to the redis-server at addr, and registers
// the client's closing with t.Cleanup.
type NewNode func(t *testing.T, addr string) driver.Node

// RunNode checks the Node contract call by call on redis-server processes it starts: Eval's
// replies as int64, string, []any and nil, its NOSCRIPT fallback and the server's error text;
// SetNX; Listen's ready, delivery and return when its context ends or its connection is killed;
// every call ending by its context's deadline on a stopped server; String naming the address;
// and for a doctor.Commander, Command's replies, maps included, and the server's error text;
// and the doctor's Check of three such nodes.
func RunNode(t *testing.T, newNode NewNode) {
	t.Helper()
	s := redistest.Start(t)
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s *redistest.Server, newNode NewNode)
	}{
		{"eval-replies", evalReplies},
		{"eval-noscript", evalNoScript},
		{"setnx", setNX},
		{"listen", listen},
		{"listen-killed", listenKilled},
		{"deadline", callDeadline},
		{"string", nodeString},
		{"command", command},
		{"doctor", doctorCheck},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, newNode) })
	}
}

// A script is a Lua script for RunNode's calls.
type script struct{ src, sha string }

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

func (s script) Source() string { return s.src }
func (s script) SHA1() string   { return s.sha }

// Every shape of reply a script gives, converted as the contract says.
func evalReplies(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx := deadline(t)
	n := newNode(t, s.Addr)
	for _, c := range []struct {
		src  string
		want any
	}{
		{"return 7", int64(7)},
		{"return -1", int64(-1)},
		{"return 'seven'", "seven"},
		{"return redis.status_reply('FINE')", "FINE"},
		{"return false", nil},
		{"return {}", []any{}},
		{"return {1, 'two', false, {3, 'four'}}", []any{int64(1), "two", nil, []any{int64(3), "four"}}},
		{"return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}", []any{"k{1}", "a", "", int64(1), int64(2)}},
	} {
		got, err := n.Eval(ctx, newScript(c.src), []string{"k{1}"}, []string{"a", ""})
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Eval(%q) = %#v, %v; want %#v", c.src, got, err, c.want)
		}
	}
	_, err := n.Eval(ctx, newScript("return redis.error_reply('MINE it failed')"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "MINE it failed") {
		t.Errorf("Eval of a script that fails: %v, want the server's error text", err)
	}
	_, err = n.Eval(ctx, newScript("return redis.call('INCR', KEYS[1])"), []string{"wrongtype"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.Eval(ctx, newScript("return redis.call('LPUSH', KEYS[1], 'x')"), []string{"wrongtype"}, nil)
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Eval of a script that hits a key of another type: %v, want the server's WRONGTYPE", err)
	}
}

// A script the server does not know runs by EVAL; once known, by EVALSHA; known no more after
// SCRIPT FLUSH, by EVAL again.
func evalNoScript(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx := deadline(t)
	n := newNode(t, s.Addr)
	raw := redistest.Client(t, s.Addr)
	sc := newScript("return 'noscript " + time.Now().String() + "'") // new to the server
	for i, step := range []string{"unknown", "known", "flushed"} {
		if step == "flushed" {
			if err := raw.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := n.Eval(ctx, sc, nil, nil); err != nil {
			t.Fatalf("Eval %d, the script %s: %v", i, step, err)
		}
		known, err := raw.ScriptExists(ctx, sc.SHA1()).Result()
		if err != nil || !known[0] {
			t.Fatalf("after Eval %d the server does not know the script (%v)", i, err)
		}
	}
}

// SetNX sets an absent key with its ttl, and leaves a present one.
func setNX(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx := deadline(t)
	n := newNode(t, s.Addr)
	raw := redistest.Client(t, s.Addr)
	set, err := n.SetNX(ctx, "setnx", "first", 5*time.Second)
	if !set || err != nil {
		t.Fatalf("SetNX of an absent key = %v, %v", set, err)
	}
	set, err = n.SetNX(ctx, "setnx", "second", 5*time.Second)
	if set || err != nil {
		t.Fatalf("SetNX of a present key = %v, %v", set, err)
	}
	v, _ := raw.Get(ctx, "setnx").Result()
	ttl, _ := raw.PTTL(ctx, "setnx").Result()
	if v != "first" || ttl <= 4*time.Second || ttl > 5*time.Second {
		t.Fatalf("the key holds %q for %v more; want \"first\" for at most 5s", v, ttl)
	}
}

// A listener: what Listen told it.
type heard struct {
	mu    sync.Mutex
	ready int
	msgs  []string
	done  chan error
}

// startListen runs n.Listen on channels until ctx ends, and waits until it is ready.
func startListen(t *testing.T, ctx context.Context, n driver.Node, channels []string) *heard {
	t.Helper()
	h := &heard{done: make(chan error, 1)}
	readyCh := make(chan struct{}, 1)
	go func() {
		h.done <- n.Listen(ctx, channels, func() {
			h.mu.Lock()
			h.ready++
			h.mu.Unlock()
			readyCh <- struct{}{}
		}, func(ch, payload string) {
			h.mu.Lock()
			h.msgs = append(h.msgs, ch+"="+payload)
			h.mu.Unlock()
		})
	}()
	select {
	case <-readyCh:
	case err := <-h.done:
		t.Fatalf("Listen returned before it was ready: %v", err)
	case <-time.After(wait):
		t.Fatal("Listen was not ready after 20s")
	}
	return h
}

func (h *heard) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// Once Listen is ready, every message published on its channels is delivered, in order, and
// no other; it returns at once when its context ends.
func listen(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx, cancel := context.WithCancel(deadline(t))
	defer cancel()
	n := newNode(t, s.Addr)
	raw := redistest.Client(t, s.Addr)
	h := startListen(t, ctx, n, []string{"one", "two"})
	var want []string
	for i := range 5 {
		for _, ch := range []string{"one", "two", "other"} {
			if err := raw.Publish(ctx, ch, fmt.Sprint(i)).Err(); err != nil {
				t.Fatal(err)
			}
			if ch != "other" {
				want = append(want, fmt.Sprintf("%s=%d", ch, i))
			}
		}
	}
	redistest.Eventually(t, "every message delivered", func() bool { return len(h.messages()) >= len(want) })
	if got := h.messages(); !slices.Equal(got, want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	h.mu.Lock()
	if h.ready != 1 {
		t.Errorf("ready called %d times, want once", h.ready)
	}
	h.mu.Unlock()
	cancel()
	select {
	case err := <-h.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Listen after its context ended = %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("Listen has not returned 20s after its context ended")
	}
}

// Listen returns an error when the server closes its connection, so that the Client
// subscribes again.
func listenKilled(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx, cancel := context.WithCancel(deadline(t))
	defer cancel()
	n := newNode(t, s.Addr)
	raw := redistest.Client(t, s.Addr)
	h := startListen(t, ctx, n, []string{"killed"})
	if err := raw.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		if err == nil || ctx.Err() != nil {
			t.Errorf("Listen after its connection was killed = %v, want an error", err)
		}
	case <-time.After(wait):
		t.Fatal("Listen has not returned 20s after its connection was killed")
	}
}

// On a stopped server (SIGSTOP) every call ends by its context's deadline.
func callDeadline(t *testing.T, s *redistest.Server, newNode NewNode) {
	const timeout = 200 * time.Millisecond
	n := newNode(t, s.Addr)
	if _, err := n.SetNX(deadline(t), "warm", "x", time.Second); err != nil {
		t.Fatal(err)
	}
	s.Pause(t)
	defer s.Resume()
	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Eval", func(ctx context.Context) error { _, err := n.Eval(ctx, newScript("return 1"), nil, nil); return err }},
		{"SetNX", func(ctx context.Context) error { _, err := n.SetNX(ctx, "stopped", "x", time.Second); return err }},
		{"Listen", func(ctx context.Context) error {
			return n.Listen(ctx, []string{"stopped"}, func() {}, func(string, string) {})
		}},
		{"Command", func(ctx context.Context) error {
			cmd, ok := n.(doctor.Commander)
			if !ok {
				return errors.New("no Commander")
			}
			_, err := cmd.Command(ctx, "TIME")
			return err
		}},
	} {
		for i := range 2 { // the second on a connection the first may have broken
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			start := time.Now()
			returned := make(chan error, 1)
			go func() { returned <- c.call(ctx) }()
			select {
			case err := <-returned:
				if d := time.Since(start); err == nil || d > 5*timeout {
					t.Errorf("%s %d on a stopped server: %v after %v; want an error by the deadline, %v", c.name, i, err, d, timeout)
				}
			case <-time.After(wait):
				t.Fatalf("%s %d on a stopped server has not returned after 20s (deadline %v)", c.name, i, timeout)
			}
			cancel()
		}
	}
}

// String names the node's address, as the Client's errors then do.
func nodeString(t *testing.T, s *redistest.Server, newNode NewNode) {
	n := newNode(t, s.Addr)
	str, ok := n.(fmt.Stringer)
	if !ok || !strings.Contains(str.String(), s.Addr) {
		t.Fatalf("the node has no String method naming its address %s (%T)", s.Addr, n)
	}
}

// Command returns each shape of reply as Eval does, a map as a list of keys and values, nil for
// a nil reply, and the server's error text; the node is a Commander, or RunNode says so.
func command(t *testing.T, s *redistest.Server, newNode NewNode) {
	ctx := deadline(t)
	n, ok := newNode(t, s.Addr).(doctor.Commander)
	if !ok {
		t.Skip("not a doctor.Commander: doctor.Check checks it only through scripts")
	}
	for _, c := range []struct {
		args []string
		want func(any) bool
	}{
		{[]string{"SET", "command", "v"}, func(v any) bool { return v == "OK" }},
		{[]string{"GET", "command"}, func(v any) bool { return v == "v" }},
		{[]string{"GET", "absent"}, func(v any) bool { return v == nil }},
		{[]string{"INCR", "counter"}, func(v any) bool { _, ok := v.(int64); return ok }},
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, func(v any) bool {
			return reflect.DeepEqual(v, []any{"maxmemory-policy", "noeviction"})
		}},
		{[]string{"TIME"}, func(v any) bool { a, ok := v.([]any); return ok && len(a) == 2 }},
		{[]string{"COMMAND", "INFO", "GET", "NOSUCHCOMMAND"}, func(v any) bool {
			a, ok := v.([]any)
			return ok && len(a) == 2 && a[0] != nil && a[1] == nil
		}},
		{[]string{"INFO", "server"}, func(v any) bool { s, ok := v.(string); return ok && strings.Contains(s, "run_id:") }},
	} {
		if v, err := n.Command(ctx, c.args...); err != nil || !c.want(v) {
			t.Errorf("Command(%q) = %#v, %v", c.args, v, err)
		}
	}
	if _, err := n.Command(ctx, "NOSUCHCOMMAND"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("Command of an unknown command: %v, want the server's error text", err)
	}
}

// doctor.Check reads every node: through its commands when the node is a doctor.Commander that
// reaches one server (role, eviction, commands and acl then pass on the table's servers), else
// through scripts, with a warning for each check it could not run; nothing fails but, on a
// machine busy enough, latency.
func doctorCheck(t *testing.T, _ *redistest.Server, newNode NewNode) {
	var nodes []driver.Node
	for _, s := range redistest.StartN(t, 3) {
		nodes = append(nodes, newNode(t, s.Addr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up, err := doctor.Check(ctx, doctor.Setup{Nodes: nodes, NodeTimeout: time.Second}, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	for _, f := range up.Findings {
		switch {
		case f.Check == "latency" || f.Check == "clock" || f.Check == "persistence":
		case f.Verdict == doctor.Fail:
			t.Errorf("node %d %s failed: %s", f.Node, f.Check, f.Detail)
		case f.Node < 0:
		case strings.HasPrefix(f.Detail, "not checked: its client"):
			if f.Verdict != doctor.Warn {
				t.Errorf("node %d %s: %s, want a warning: %s", f.Node, f.Check, f.Verdict, f.Detail)
			}
		case f.Verdict != doctor.OK:
			t.Errorf("node %d %s: %s: %s", f.Node, f.Check, f.Verdict, f.Detail)
		}
	}
	if n := len(up.Findings); n != 3*9+1 {
		t.Errorf("%d findings, want 9 a node and the quorum's: %v", n, up.Findings)
	}
}
