package redlockrueidis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/redlock/internal/redistest"
)

// batcherOf returns the batcher of a node over a new rueidis client of s, with its connections
// made: rueidis spreads a client's commands over its connections to a server (two on 2 cores,
// four on more) at random, and makes each at its first command, which then waits for the
// connection up to the client's dial timeout (5 s) whatever its deadline. 64 calls make every
// one of them but once in 10^7.
func batcherOf(t *testing.T, s *redistest.Server) *batcher {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := Node(c).(*node).batch
	for range 64 {
		if _, err := setNX(b, context.Background(), "warm"); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// setNX sends SET NX PX through b.
func setNX(b *batcher, ctx context.Context, key string) (rueidis.RedisResult, error) {
	c := b.client
	res, err := b.do(ctx, c, c.B().Set().Key(key).Value("x").Nx().PxMilliseconds(60_000).Build())
	if err == nil {
		err = res.Error()
	}
	if rueidis.IsRedisNil(err) {
		err = nil
	}
	return res, err
}

// concurrently makes n calls of setNX through b at once, each under a context of its own that
// ends after timeout, and returns how long each took and its error.
func concurrently(b *batcher, n int, timeout time.Duration) ([]time.Duration, []error) {
	took, errs := make([]time.Duration, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, errs[i] = setNX(b, ctx, fmt.Sprint("k", i))
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	return took, errs
}

// idle fails unless b has no call in flight and none queued.
func idle(t *testing.T, b *batcher, when string) {
	t.Helper()
	b.mu.Lock()
	busy, queued := b.batching || b.alone != 0, len(b.queue)
	b.mu.Unlock()
	if busy || queued != 0 {
		t.Fatalf("%s: the batcher is left busy %v with %d calls queued", when, busy, queued)
	}
}

// A call that finds others in flight is queued behind them in the same step: were it queued
// after, a call in flight could end in between, find nobody queued and leave the node idle, and
// the call would wait for its context to end. One call more at a time than go out on their own,
// again and again: every call is answered, and the batcher is idle after each round.
func TestBatcherCallQueuedBehindOneEndingIsSent(t *testing.T) {
	b := batcherOf(t, redistest.Start(t))
	rounds := 0
	for start := time.Now(); rounds < 5000 && time.Since(start) < 3*time.Second; rounds++ {
		// Far longer than a reply from a local server takes under any load: a call that waits
		// it out was never sent.
		_, errs := concurrently(b, maxAlone+1, 5*time.Second)
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: a call to a node that answers at once: %v", rounds, err)
			}
		}
		idle(t, b, fmt.Sprintf("round %d answered", rounds))
	}
	t.Logf("%d rounds", rounds)
}

// On a stopped server (SIGSTOP) calls that queue behind a batch in flight end by their own
// deadline, like the calls sent alone; once the server goes on, the batcher sends again.
func TestBatcherCallsEndByTheirDeadlineOnAStoppedNode(t *testing.T) {
	s := redistest.Start(t)
	b := batcherOf(t, s)
	s.Pause(t)
	const timeout = 300 * time.Millisecond
	took, errs := concurrently(b, 4*maxAlone, timeout)
	s.Resume()
	for i, err := range errs {
		if err == nil || took[i] > timeout+time.Second {
			t.Errorf("call %d on a stopped server: %v after %v, want a deadline's error by %v", i, err, took[i], timeout)
		}
	}
	// The stopped server's replies come now: the batch in flight ends, and the queue goes on.
	took, errs = concurrently(b, 4*maxAlone, 10*time.Second)
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d once the server went on: %v after %v", i, err, took[i])
		}
	}
	redistest.Eventually(t, "the batcher idle", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.batching && b.alone == 0 && len(b.queue) == 0
	})
}

// On a killed server (connection refused) calls fail fast, alone or in a batch, and the
// batcher is idle after.
func TestBatcherCallsFailFastOnAKilledNode(t *testing.T) {
	s := redistest.Start(t)
	b := batcherOf(t, s)
	s.Kill()
	const timeout = 10 * time.Second
	took, errs := concurrently(b, 4*maxAlone, timeout)
	for i, err := range errs {
		if err == nil || took[i] > timeout/2 {
			t.Errorf("call %d on a killed server: %v after %v, want an error before %v", i, err, took[i], timeout/2)
		}
	}
	idle(t, b, "every call returned")
}

// The caller handed the queue may have given up at that very moment: whichever of the two it
// sees first, the calls behind it are sent. (Were they not, the batcher would stay busy and
// every later call would wait out its context.)
func TestBatcherQueueGoesOnWhenItsLeadGaveUp(t *testing.T) {
	b := batcherOf(t, redistest.Start(t))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		lead := &batchCall{ctx: gone, cmd: b.client.B().Get().Key("lead").Build(), ready: make(chan struct{}, 1)}
		b.mu.Lock()
		b.batching = true // as while a batch is in flight
		b.queue = append(b.queue, lead)
		b.mu.Unlock()
		behind := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := setNX(b, ctx, "behind")
			behind <- err
		}()
		redistest.Eventually(t, "a call queued behind the lead", func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) == 2
		})
		b.sentBatch() // the batch in flight ends: the queue goes to the lead, whose ctx ended
		b.wait(lead)  // its context's error, or its reply should that come first
		if err := <-behind; err != nil {
			t.Fatalf("%d: the call behind a lead that gave up: %v", i, err)
		}
		idle(t, b, fmt.Sprintf("%d: both returned", i))
	}
}

// A cluster client's node sends each call on its own: rueidis's DoMulti on a cluster waits for
// every shard of a batch, so that one stopped master would hold up the calls to the others.
func TestClusterNodeCallsToLiveMastersGoOnWhileOneIsStopped(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: redistest.Addrs(cl.Masters)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	n := Node(c).(*node)
	stopped := cl.Masters[0]
	var live, dead []string
	for i := 0; len(live) < 4*maxAlone || len(dead) < 4*maxAlone; i++ {
		key := fmt.Sprint("k", i)
		if cl.Owner(t, key) == stopped {
			dead = append(dead, key)
		} else {
			live = append(live, key)
		}
		// Every connection made, so that no call waits for one to the stopped master.
		if _, err := n.setNX(context.Background(), key, "warm", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	stopped.Pause(t)
	defer stopped.Resume()
	call := func(key string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := n.setNX(ctx, key, "x", time.Minute)
		return err
	}
	var wg sync.WaitGroup
	for _, key := range dead { // in flight on the stopped master first, as a Client's calls would be
		wg.Go(func() { call(key, 3*time.Second) })
	}
	time.Sleep(50 * time.Millisecond)
	for _, key := range live {
		wg.Go(func() {
			start := time.Now()
			if err := call(key, time.Second); err != nil {
				t.Errorf("%s, on a live master, after %v: %v", key, time.Since(start), err)
			}
		})
	}
	wg.Wait()
}
