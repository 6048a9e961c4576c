package redlock_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A panic in Do's fn releases the lock, as defer mu.Unlock() would, and goes on to Do's caller:
// another Client takes the lock at once, long before its ttl.
func TestDoPanicReleasesTheLock(t *testing.T) {
	ctx := context.Background()
	const ttl = 10 * time.Second
	type body = func(context.Context) error
	type hold func(t *testing.T, c *redlock.Client, fn body) error
	type try func(t *testing.T, c *redlock.Client) (*redlock.Lock, error)
	sem := func(t *testing.T, c *redlock.Client) *redlock.Semaphore { return semaphore(t, c, "job", 1) }
	rw := func(t *testing.T, c *redlock.Client) *redlock.RWMutex { return rwMutex(t, c, "job") }
	for _, tc := range []struct {
		name string
		do   hold
		try  try
	}{
		{"Client.Do", func(_ *testing.T, c *redlock.Client, fn body) error { return c.Do(ctx, "job", ttl, fn) },
			func(_ *testing.T, c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(ctx, "job", ttl) }},
		{"Semaphore.Do", func(t *testing.T, c *redlock.Client, fn body) error { return sem(t, c).Do(ctx, ttl, fn) },
			func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return sem(t, c).TryLock(ctx, ttl) }},
		{"RWMutex.Do", func(t *testing.T, c *redlock.Client, fn body) error { return rw(t, c).Do(ctx, ttl, fn) },
			func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return rw(t, c).TryLock(ctx, ttl) }},
		{"RWMutex.RDo", func(t *testing.T, c *redlock.Client, fn body) error { return rw(t, c).RDo(ctx, ttl, fn) },
			func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return rw(t, c).TryLock(ctx, ttl) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := redistest.Minis(t, 3)
			a, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var got any
			func() {
				defer func() { got = recover() }()
				tc.do(t, a, func(context.Context) error { panic("boom") })
			}()
			if got != "boom" {
				t.Fatalf("recovered %v, want the panic of fn", got)
			}
			l, err := tc.try(t, b)
			if err != nil {
				t.Fatalf("another Client cannot take the lock after fn panicked: %v", err)
			}
			l.Unlock(ctx)
		})
	}
}

// abandonedCall reports whether g, a goroutine's stack, is a node call that the Client
// abandoned: inside go-redis, or waiting to be sent until its deadline.
func abandonedCall(g string) bool { return strings.Contains(g, "redlock.round[...].call") }

// ourGoroutines returns the stacks of the goroutines running code of the redlock package.
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "quorumlock/redlock/redlock.") && !strings.Contains(g, "redlock_test.") {
			ours = append(ours, g)
		}
	}
	return ours
}

// With one node of three stopped (SIGSTOP: silent, not refusing), a warm Client's TryLock and
// Unlock do not wait behind the calls the stopped node holds, and Close returns within about
// twice the node timeout, leaving no goroutine of the Client behind but the node calls it
// abandoned, which end by go-redis's own timeouts (5 s for a command, 10 s for a pipeline of
// them, with its defaults), the node still stopped. Before, Close waited for those calls and
// go-redis's retries: 10–45 s.
func TestRealServersCloseIsBoundedWhenANodeStops(t *testing.T) {
	// Not parallel: it reads every goroutine of the process.
	// Not the default 100 ms: under -race on a busy machine a healthy node's reply can take
	// longer, and TryLock then fails on two silent nodes of three.
	const nodeTimeout = 300 * time.Millisecond
	for _, locks := range []int{1, 10} {
		ss := redistest.StartN(t, 3)
		c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(nodeTimeout))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		l, err := c.TryLock(ctx, "warm", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.Unlock(ctx)
		ss[0].Pause(t)
		for i := range locks {
			start := time.Now()
			l, err := c.TryLock(ctx, "k"+string(rune('a'+i)), 10*time.Second)
			if err != nil {
				t.Fatalf("TryLock with one node of three stopped: %v", err)
			}
			l.Unlock(ctx)
			if d := time.Since(start); d > 10*nodeTimeout {
				t.Errorf("TryLock+Unlock %d took %v with one node stopped; it must not wait for that node", i, d)
			}
		}
		start := time.Now()
		c.Close()
		if d := time.Since(start); d > 10*nodeTimeout {
			t.Errorf("%d locks: Close took %v; it must return within about twice the node timeout (%v)", locks, d, nodeTimeout)
		}
		// As goleak does, give a goroutine that is returning a moment to be gone.
		var g []string
		eventually(200*time.Millisecond, func() bool { g = slices.DeleteFunc(ourGoroutines(), abandonedCall); return len(g) == 0 })
		if len(g) > 0 {
			t.Errorf("%d locks: %d goroutines of the Client outlive Close:\n%s", locks, len(g), strings.Join(g, "\n\n"))
		}
		if locks == 1 {
			ss[0].Resume() // the abandoned calls end at once; the 10 locks show they end anyway
		}
		if !eventually(15*time.Second, func() bool { return len(ourGoroutines()) == 0 }) {
			t.Fatalf("%d locks: calls still running inside go-redis 15 s after Close:\n%s", locks, strings.Join(ourGoroutines(), "\n\n"))
		}
		ss[0].Resume()
	}
}

// Options are checked against overflow: whatever the values, nothing panics, in New or later
// in a goroutine of the Client (which would kill the process).
func TestExtremeOptionsNeverPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, opt := range []redlock.Option{
		redlock.WithRetryDelay(0, math.MaxInt64),
		redlock.WithRetryDelay(math.MaxInt64, math.MaxInt64),
		redlock.WithRetryDelay(math.MaxInt64-1, math.MaxInt64),
		redlock.WithNodeTimeout(math.MaxInt64),
		redlock.WithDriftFactor(0.4999999),
		redlock.WithDriftFactor(0),
	} {
		ms := redistest.Minis(t, 3)
		// A node timeout long against a busy machine, unless opt is the one to try.
		c, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second), opt)
		if err != nil {
			continue // refused: fine, as long as it says so
		}
		holder, err := c.TryLock(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if _, err := c.Lock(wctx, "k", time.Second); err == nil {
			t.Error("a second Lock took a held key")
		}
		cancel()
		holder.Unlock(ctx)
		for _, ttl := range []time.Duration{math.MaxInt64 / time.Millisecond * time.Millisecond, time.Millisecond, -time.Millisecond} {
			if l, err := c.TryLock(ctx, "t", ttl); err == nil {
				l.Extend(ctx, ttl)
				l.Unlock(ctx)
			}
		}
		c.Close()
	}
}

// Unlock says ErrNotHeld only when the nodes said so: when too few nodes answered to tell, it
// says ErrNoQuorum, with each node's error.
func TestRealServersUnlockWithoutAnswersIsNoQuorum(t *testing.T) {
	ss := redistest.StartN(t, 3)
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ss[0].Pause(t)
	ss[1].Pause(t)
	err = l.Unlock(ctx)
	if err == nil || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock with 2 of 3 nodes silent = %v; want no ErrNotHeld: nobody said the lock was not held", err)
	}
	if !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("Unlock with 2 of 3 nodes silent = %v; want ErrNoQuorum", err)
	}
	var ne *redlock.NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("Unlock = %v; want the nodes' errors", err)
	}
}

// A node's error that echoes the command's arguments (an unknown or renamed command does) never
// carries the lock's token into an error or an Observer's report.
func TestRealServersNodeErrorsCarryNoToken(t *testing.T) {
	ss := []*redistest.Server{
		redistest.Start(t, "--rename-command", "EVALSHA", "EVALSHA_RENAMED"),
		redistest.Start(t, "--rename-command", "EVALSHA", "EVALSHA_RENAMED"),
		redistest.Start(t),
	}
	var mu sync.Mutex
	var seen []string
	obs := locktrace.Observer{NodeReply: func(_ context.Context, r locktrace.NodeReply) {
		if r.Err != nil {
			mu.Lock()
			seen = append(seen, r.Err.Error())
			mu.Unlock()
		}
	}}
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(time.Second), redlock.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Unlock(ctx)
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("Unlock on nodes without EVALSHA = %v; want their unknown-command errors", err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range append(seen, err.Error()) {
		if strings.Contains(s, l.Token()) {
			t.Errorf("an error carries the token: %s", s)
		}
	}
	if len(seen) == 0 {
		t.Error("the Observer saw no node error")
	}
}

// A read-only replica answers at once; its error is named (READONLY), not reported as a node
// that did not answer in time, even though go-redis retries it by default.
func TestRealServersReadOnlyReplicaIsNamed(t *testing.T) {
	primary := redistest.Start(t)
	ss := []*redistest.Server{
		redistest.Start(t, "--replicaof", strings.Replace(primary.Addr, ":", " ", 1)),
		redistest.Start(t, "--replicaof", strings.Replace(primary.Addr, ":", " ", 1)),
		redistest.Start(t),
	}
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(ss)...), redlock.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.TryLock(context.Background(), "k", 10*time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock with 2 replicas of 3 nodes = %v; want ErrNotAcquired", err)
	}
	for _, node := range []int{0, 1} {
		var found bool
		for _, e := range nodeErrors(err) {
			if e.Node == node {
				found = true
				if !strings.Contains(e.Error(), "READONLY") {
					t.Errorf("node %d, a replica: %v; want its READONLY", node, e)
				}
			}
		}
		if !found {
			t.Errorf("no error for node %d in %v", node, err)
		}
	}
}

// nodeErrors returns every *NodeError that err wraps.
func nodeErrors(err error) []*redlock.NodeError {
	var out []*redlock.NodeError
	var walk func(error)
	walk = func(err error) {
		if ne, ok := err.(*redlock.NodeError); ok {
			out = append(out, ne)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		} else if e := errors.Unwrap(err); e != nil {
			walk(e)
		}
	}
	walk(err)
	return out
}

// Whoever may PUBLISH on the library's channels cannot make a waiter hold a lock: it reads the
// waiters' names from the nodes (the queues, PUBSUB CHANNELS) and publishes every message a
// release could send, over and over, while another Client holds the key on every node. The
// waiting Lock never returns a lock.
func TestRealServersForgedAnnouncementsMakeNoHolder(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	holder, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second),
		redlock.WithRetryDelay(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	ctx := context.Background()
	held, err := holder.Lock(ctx, "k", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)

	stop := make(chan struct{})
	var forger sync.WaitGroup
	forger.Go(func() { forge(ctx, redistest.Clients(t, addrs...), stop) })
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	l, err := waiter.Lock(wctx, "k", 30*time.Second)
	close(stop)
	forger.Wait()
	if err == nil {
		l.Unlock(ctx)
		t.Fatalf("a waiter returned a lock held by another Client on every node (token %q)", l.Token())
	}
}

// forge publishes, until stop, every message a release might send to anything that looks like
// a waiter on the nodes: first the messages that name a waiter (a hand-over's among them), then,
// now and then, the release of the key to everyone.
func forge(ctx context.Context, nodes []redis.UniversalClient, stop <-chan struct{}) {
	for round := 0; ; round++ {
		select {
		case <-stop:
			return
		default:
		}
		for _, n := range nodes {
			chans, _ := n.PubSubChannels(ctx, "*").Result()
			keys, _ := n.Keys(ctx, "*").Result()
			var names []string
			for _, k := range keys {
				if members, err := n.ZRange(ctx, k, 0, -1).Result(); err == nil {
					names = append(names, members...)
				}
			}
			for _, ch := range chans {
				for _, k := range keys {
					for _, name := range names {
						n.Publish(ctx, ch, k+"\n"+name+"\nhanded")
						n.Publish(ctx, ch, k+"\n"+name)
					}
					if round%10 == 9 {
						n.Publish(ctx, ch, k+"\n")
					}
				}
			}
		}
	}
}

// Locks left to expire without Unlock do not pile up in the Client (which Close would release).
func TestExpiredLocksAreNotKept(t *testing.T) {
	t.Parallel()
	ms := redistest.Minis(t, 3)
	c, err := redlock.New(redistest.MiniClients(t, ms), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for i := range 1000 {
		if _, err := c.TryLock(ctx, "k"+strconv.Itoa(i), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			elapse(210 * time.Millisecond) // they expire
		}
	}
	var released atomic.Int32
	ms[0].Server().SetPreHook(func(_ *server.Peer, cmd string, _ ...string) bool {
		if cmd == "EVALSHA" || cmd == "EVAL" {
			released.Add(1)
		}
		return false
	})
	c.Close()
	if n := released.Load(); n > 200 {
		t.Fatalf("Close released %d locks that had expired long before", n)
	}
}
