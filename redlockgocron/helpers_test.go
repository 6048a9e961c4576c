package redlockgocron_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
)

func TestMain(m *testing.M) {
	if addrs := os.Getenv(pausedLeaderEnv); addrs != "" {
		pausedLeader(addrs)
	}
	redis.SetLogger(quiet{}) // no log line for every refused dial of a node cut off on purpose
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// servers starts n redis-server processes on free loopback ports, without persistence, and
// returns their addresses; t.Cleanup kills them. Without redis-server the test is skipped,
// unless the run must have it (REDLOCK_REQUIRE_REDIS set, as make test does, or CI=true).
func servers(t *testing.T, n int) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("REDLOCK_REQUIRE_REDIS") != "" || os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required here but not installed: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	addrs := make([]string, n)
	for i := range addrs {
		var err error
		for range 5 { // a free port may be taken between finding and binding it
			if addrs[i], err = server(t); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return addrs
}

// server starts one redis-server on a port that was free a moment ago.
func server(t *testing.T) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--dir", t.TempDir(), "--save", "", "--appendonly", "no", "--protected-mode", "no")
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { cmd.Process.Kill(); <-exited }
	c := client(addr)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		select {
		case <-exited:
			return "", fmt.Errorf("redis-server on %s exited: %s", addr, out)
		default:
		}
		if err == nil {
			t.Cleanup(stop)
			return addr, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server on %s did not answer: %v; output: %s", addr, err, out)
		}
	}
}

// client returns a go-redis client of addr that fails at once rather than retry.
func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// A node is a redlock.Node over a go-redis client that a test can cut off, or have split a
// vote.
type node struct {
	rc    *redis.Client
	split *splitter // nil for none
	mine  bool      // whether this is its member's own node, for split
	cut   atomic.Bool
}

// A splitter splits the votes of its members' next TryLock calls, once armed: a member's
// SET NX to another member's node waits until every member's SET NX to its own node has landed,
// so that each of them wins its own node and nothing else; and no SET NX returns before all of
// them have landed, so that no roll-back frees a node for another member's late SET NX.
type splitter struct {
	mu       sync.Mutex
	n        int           // members
	own, all int           // SET NX calls landed since armed: to a member's own node, and all
	ownDone  chan struct{} // closed once the n own nodes are set
	allDone  chan struct{} // closed once n*n SET NX calls have landed
}

func newSplitter(n int) *splitter {
	s := &splitter{n: n, own: n, all: n * n, ownDone: make(chan struct{}), allDone: make(chan struct{})}
	close(s.ownDone)
	close(s.allDone)
	return s
}

// arm splits the next vote.
func (s *splitter) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.own, s.all, s.ownDone, s.allDone = 0, 0, make(chan struct{}), make(chan struct{})
}

// setNX runs set, a SET NX to a member's own node or not, in its turn.
func (s *splitter) setNX(ctx context.Context, own bool, set func() (bool, error)) (bool, error) {
	s.mu.Lock()
	ownDone, allDone := s.ownDone, s.allDone
	s.mu.Unlock()
	if !own {
		if err := wait(ctx, ownDone); err != nil {
			return false, err
		}
	}
	ok, err := set()
	s.mu.Lock()
	if own {
		if s.own++; s.own == s.n {
			close(s.ownDone)
		}
	}
	if s.all++; s.all == s.n*s.n {
		close(s.allDone)
	}
	s.mu.Unlock()
	if werr := wait(ctx, allDone); werr != nil {
		return false, werr
	}
	return ok, err
}

func wait(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ driver.Node = (*node)(nil)

var errCut = errors.New("cut off by the test")

func (n *node) Eval(ctx context.Context, s driver.Script, keys, args []string) (any, error) {
	if n.cut.Load() {
		return nil, errCut
	}
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	v, err := n.rc.EvalSha(ctx, s.SHA1(), keys, a...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = n.rc.Eval(ctx, s.Source(), keys, a...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func (n *node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.cut.Load() {
		return false, errCut
	}
	set := func() (bool, error) { return n.rc.SetNX(ctx, key, value, ttl).Result() }
	if n.split != nil {
		return n.split.setNX(ctx, n.mine, set)
	}
	return set()
}

func (n *node) Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	if n.cut.Load() {
		<-ctx.Done() // heard nothing until the Client stops listening
		return ctx.Err()
	}
	ps := n.rc.Subscribe(ctx, channels...)
	defer context.AfterFunc(ctx, func() { ps.Close() })()
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Count == len(channels) {
				ready()
			}
		case *redis.Message:
			deliver(m.Channel, m.Payload)
		}
	}
}

// A member is one scheduler's process: a Client over its own connections to every node.
type member struct {
	c     *redlock.Client
	nodes []*node
}

// members returns n members over the nodes at addrs, whose votes split is splits when armed (nil
// for none; member i's own node is node i). t.Cleanup closes the Clients, then the connections.
func members(t *testing.T, n int, addrs []string, split *splitter, opts ...redlock.Option) []*member {
	t.Helper()
	ms := make([]*member, n)
	for i := range ms {
		m := &member{}
		var nodes []driver.Node
		for j, a := range addrs {
			rc := client(a)
			t.Cleanup(func() { rc.Close() })
			if err := rc.Ping(context.Background()).Err(); err != nil { // dialled before the test's calls
				t.Fatal(err)
			}
			nd := &node{rc: rc, split: split, mine: i == j}
			m.nodes = append(m.nodes, nd)
			nodes = append(nodes, nd)
		}
		// A node timeout generous for a loaded machine under -race, unless opts set one.
		c, err := redlock.NewNodes(nodes, append([]redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		m.c = c
		ms[i] = m
	}
	return ms
}

// crash cuts the member off from every node: its calls fail, as if its process had died.
func (m *member) crash() {
	for _, n := range m.nodes {
		n.cut.Store(true)
	}
}

// heal ends crash: the member's calls reach the nodes again.
func (m *member) heal() {
	for _, n := range m.nodes {
		n.cut.Store(false)
	}
}

// minis starts n miniredis servers and a Client over them with opts; t.Cleanup closes them all.
func minis(t *testing.T, n int, opts ...redlock.Option) ([]*miniredis.Miniredis, *redlock.Client) {
	t.Helper()
	var ms []*miniredis.Miniredis
	var nodes []redis.UniversalClient
	for range n {
		m := miniredis.RunT(t)
		rc := client(m.Addr())
		t.Cleanup(func() { rc.Close() })
		ms = append(ms, m)
		nodes = append(nodes, rc)
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ms, c
}

func commands(ms []*miniredis.Miniredis) int {
	n := 0
	for _, m := range ms {
		n += m.CommandCount()
	}
	return n
}

// within waits until cond holds, polling, and fails t after d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so within %v: %s", d, what)
		}
	}
}
