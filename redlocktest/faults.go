package redlocktest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// With node 0 stopped (SIGSTOP: silent, not refusing), a lock is acquired, extended and
// released on the other two without waiting for it, and a release still wakes a waiter of
// another Client.
func stoppedNode(t *testing.T, s suite) {
	ctx := deadline(t)
	const nodeTimeout = 2 * time.Second
	n := s.shared
	c := s.client(t, n, redlock.WithNodeTimeout(nodeTimeout))
	waiter := s.client(t, n, redlock.WithNodeTimeout(nodeTimeout), redlock.WithRetryDelay(time.Hour, time.Hour))
	warm(t, c)
	n.servers[0].Pause(t)

	start := time.Now()
	l, err := c.TryLock(ctx, "stopped", ttl)
	if err != nil {
		t.Fatalf("TryLock with one node of three stopped: %v", err)
	}
	if err := l.Extend(ctx, ttl); err != nil {
		t.Fatalf("Extend with one node of three stopped: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with one node of three stopped: %v", err)
	}
	if d := time.Since(start); d >= nodeTimeout {
		t.Fatalf("TryLock, Extend and Unlock took %v with one node stopped: they waited for it (node timeout %v)", d, nodeTimeout)
	}

	held, err := c.Lock(ctx, "stopped-wake", ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := waited(ctx, func(ctx context.Context) (*redlock.Lock, error) { return waiter.Lock(ctx, "stopped-wake", ttl) })
	settle()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter, after a release with one node stopped: %v", err)
	}
}

// warm makes a lock and releases it, so that c has its connections. A first call on cold
// connections (a cluster client loads its slots) can take longer than a short node timeout on
// a busy machine, so it tries until the deadline.
func warm(t *testing.T, c *redlock.Client) {
	t.Helper()
	ctx := deadline(t)
	for {
		l, err := c.TryLock(ctx, "warm", ttl)
		if err == nil {
			err = l.Unlock(ctx)
		}
		switch {
		case err == nil:
			return
		case ctx.Err() != nil:
			t.Fatalf("no lock and release on warm connections before the deadline: %v", err)
		}
	}
}

// Node 0 sleeps (DEBUG SLEEP) longer than the node timeout: a lock is acquired and released
// on the other two without waiting for it; what it took late is released or expires with the
// lock's ttl; once awake it serves the same Client again.
func slowNode(t *testing.T, s suite) {
	ctx := deadline(t)
	const nodeTimeout, sleep, short = 200 * time.Millisecond, time.Second, 2 * time.Second
	n := s.shared
	c := s.client(t, n, redlock.WithNodeTimeout(nodeTimeout))
	warm(t, c)
	var slept sync.WaitGroup
	slept.Go(func() { n.raw[0].Do(ctx, "DEBUG", "SLEEP", sleep.Seconds()) })
	time.Sleep(50 * time.Millisecond) // the node is asleep

	start := time.Now()
	l, err := c.TryLock(ctx, "slow", short)
	if err != nil {
		t.Fatalf("TryLock with one node of three asleep: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with one node of three asleep: %v", err)
	}
	if d := time.Since(start); d >= sleep/2 {
		t.Fatalf("TryLock and Unlock took %v with one node asleep for %v: they waited for it", d, sleep)
	}
	slept.Wait()
	redistest.Eventually(t, "the slow node holds nothing once its late acquisition is released or expired", func() bool {
		return n.empty(t, "slow")
	})
	l, err = c.TryLock(ctx, "awake", ttl)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the node, awake, takes the Client's locks again", func() bool {
		return n.holders(t, "awake")[0] == l.Token()
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// With node 0 stopped, Close of a Client that holds a lock and has a waiting Lock call (and so
// its subscriptions) returns within about twice the node timeout; the waiting call returns
// ErrClosed.
func closeBound(t *testing.T, s suite) {
	ctx := deadline(t)
	const nodeTimeout = 500 * time.Millisecond
	n := s.shared
	holder := s.client(t, n)
	c, err := s.connect(t, n.addrs, redlock.WithNodeTimeout(nodeTimeout), redlock.WithRetryDelay(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := holder.Lock(ctx, "close-wait", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(ctx, "close-held", ttl); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "close-wait", ttl)
		got <- err
	}()
	settle()
	n.servers[0].Pause(t)

	start := time.Now()
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatalf("Close with a node stopped has not returned after %v", time.Since(start))
	}
	d := time.Since(start)
	t.Logf("Close took %v with a node stopped (node timeout %v)", d, nodeTimeout)
	if limit := 4 * nodeTimeout; d > limit {
		t.Errorf("Close took %v with a node stopped; it must return within about twice the node timeout (%v; limit with slack %v)", d, nodeTimeout, limit)
	}
	select {
	case err := <-got:
		if !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("the waiting Lock call after Close: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiting Lock call did not return after Close")
	}
}

// The servers' error replies come back at once and name the server's reason: a replica's
// READONLY (plain servers only), an ACL's NOPERM. Each node's error names its address.
func serverErrors(t *testing.T, s suite) {
	ctx := deadline(t)
	want := map[int]string{0: "NOPERM", 1: "NOPERM"}
	first := s.denied[0]
	if !s.cluster { // a cluster node cannot be a plain server's replica
		primary := redistest.Start(t)
		first = redistest.Start(t, "--replicaof", strings.Replace(primary.Addr, ":", " ", 1))
		want[0] = "READONLY"
	}
	n := nodesOf(t, []*redistest.Server{first, s.denied[1], s.shared.servers[2]})
	const nodeTimeout = 2 * time.Second
	c := s.client(t, n, redlock.WithNodeTimeout(nodeTimeout))
	for _, try := range []struct {
		name string
		try  func() (*redlock.Lock, error)
	}{
		{"TryLock (SET NX)", func() (*redlock.Lock, error) { return c.TryLock(ctx, "denied", ttl) }},
		{"Semaphore.TryLock (EVALSHA)", func() (*redlock.Lock, error) {
			sem, _ := c.Semaphore("denied", 1)
			return sem.TryLock(ctx, ttl)
		}},
	} {
		start := time.Now()
		_, err := try.try()
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s on 2 refusing nodes of 3: %v, want ErrNotAcquired", try.name, err)
		}
		if d := time.Since(start); d >= nodeTimeout {
			t.Errorf("%s took %v: the refusals did not come back at once (node timeout %v)", try.name, d, nodeTimeout)
		}
		errs := nodeErrors(err)
		for node, reason := range want {
			e := errs[node]
			switch {
			case e == nil:
				t.Errorf("%s: no error for node %d in %v", try.name, node, err)
			case !strings.Contains(e.Error(), reason):
				t.Errorf("%s: node %d: %v, want the server's %s", try.name, node, e, reason)
			case !strings.Contains(e.Addr, n.addrs[node]):
				t.Errorf("%s: node %d is named %q, not by its address %s", try.name, node, e.Addr, n.addrs[node])
			}
		}
	}
	// Each refused command was sent once, not retried by the client: SET once on both
	// refusing nodes; on the NOPERM node, scripts three times (the Semaphore's attempt, and the
	// roll-back of each attempt, which the nodes' errors leave unknown).
	counted := func() bool {
		return sent(t, n.raw[0], "set") == 1 && sent(t, n.raw[1], "set") == 1 && sent(t, n.raw[1], "evalsha", "eval") == 3
	}
	for end := time.Now().Add(5 * time.Second); !counted() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the roll-backs are on their way
	}
	time.Sleep(100 * time.Millisecond) // and nothing comes after them
	if set0, set1, scripts := sent(t, n.raw[0], "set"), sent(t, n.raw[1], "set"), sent(t, n.raw[1], "evalsha", "eval"); set0 != 1 || set1 != 1 || scripts != 3 {
		t.Fatalf("SET reached the refusing nodes %d and %d times, scripts the NOPERM node %d times; want 1, 1 and 3", set0, set1, scripts)
	}
}

// sent returns how many times rc's server was sent the commands named, whether it ran them,
// failed them or refused them (INFO commandstats).
func sent(t *testing.T, rc *redis.Client, names ...string) int {
	t.Helper()
	info, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	n := 0
	for line := range strings.SplitSeq(info, "\r\n") {
		name, stats, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		for kv := range strings.SplitSeq(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "calls" || k == "rejected_calls" || k == "failed_calls" {
				c, _ := strconv.Atoi(v)
				n += c
			}
		}
	}
	return n
}

// nodeErrors returns the *redlock.NodeError that err wraps for each node.
func nodeErrors(err error) map[int]*redlock.NodeError {
	out := make(map[int]*redlock.NodeError)
	var walk func(error)
	walk = func(err error) {
		var ne *redlock.NodeError
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &ne) {
				out[ne.Node] = ne
			}
		}
	}
	walk(err)
	return out
}

// Two nodes answer every script with a reply of the wrong shape (their EVALSHA is MGET, which
// answers an array of nils): what needs a script fails with those nodes' errors, and the Client
// goes on working (no panic, Close returns).
func badReplies(t *testing.T, s suite) {
	ctx := deadline(t)
	n := nodesOf(t, append(slices.Clone(s.wrong), s.shared.servers[2]))
	c := s.client(t, n)
	sem, _ := c.Semaphore("bad", 1)
	_, err := sem.TryLock(ctx, ttl)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Semaphore.TryLock with 2 of 3 nodes answering nonsense: %v, want ErrNotAcquired", err)
	}
	errs := nodeErrors(err)
	for node := range 2 {
		if errs[node] == nil {
			t.Errorf("no error for node %d, which answered nonsense, in %v", node, err)
		}
	}
	l, err := c.TryLock(ctx, "bad", ttl) // SET NX: the nodes answer it well
	if err != nil {
		t.Fatalf("TryLock (SET NX) on the same nodes: %v", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("Unlock (a script) with 2 of 3 nodes answering nonsense: %v, want ErrNoQuorum", err)
	}
}
