package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// counter is a go-redis hook that counts commands sent on their own and pipelines of the
// library's commands sent.
type counter struct {
	direct, pipelines, largest atomic.Int64
}

func (h *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.direct.Add(1)
		return next(ctx, cmd)
	}
}

func (h *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "set" || strings.HasPrefix(c.Name(), "eval") }) {
			return next(ctx, cmds) // go-redis's own, such as the handshake of a new connection
		}
		h.pipelines.Add(1)
		for n := int64(len(cmds)); ; {
			old := h.largest.Load()
			if n <= old || h.largest.CompareAndSwap(old, n) {
				break
			}
		}
		return next(ctx, cmds)
	}
}

// gated returns a miniredis node whose SET of key "stall" waits until the returned gate is
// closed, a go-redis client of it counted by the returned counter, and a batcher over it.
func gated(t *testing.T) (*miniredis.Miniredis, chan struct{}, *counter, *batcher) {
	t.Helper()
	m := miniredis.RunT(t)
	gate := make(chan struct{})
	m.Server().SetPreHook(func(p *server.Peer, cmd string, args ...string) bool {
		if cmd == "SET" && args[0] == "stall" {
			<-gate
		}
		return false
	})
	rc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { rc.Close() })
	h := new(counter)
	rc.AddHook(h)
	return m, gate, h, &batcher{node: rc}
}

// stall sends SET stall through b and returns once it is in flight; the returned channel
// closes when it returns.
func stall(t *testing.T, b *batcher) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		setNX(context.Background(), b, "stall")
	}()
	waitFor(t, "the stalling call in flight", func() bool { return b.inFlight() })
	return done
}

// setNX sets key to "token" for a minute through b, unless it exists, as an attempt does.
func setNX(ctx context.Context, b *batcher, key string) (bool, error) {
	cmd := redis.NewBoolCmd(ctx, "set", key, "token", "px", time.Minute.Milliseconds(), "nx")
	err := b.Process(ctx, cmd)
	return cmd.Val(), err
}

func (b *batcher) inFlight() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy
}

func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 10s: %s", what)
		}
	}
}

// Calls that arrive while one is in flight go out together, in the order they came: a release
// queued behind its SET finds the key and deletes it.
func TestBatcherSendsQueuedCallsTogetherInOrder(t *testing.T) {
	m, gate, h, b := gated(t)
	ctx := context.Background()
	if err := releaseScript.Load(ctx, b.node).Err(); err != nil { // no NOSCRIPT, no EVAL after
		t.Fatal(err)
	}
	done := stall(t, b)
	var wg sync.WaitGroup
	results := make([]error, 10)
	for i := range 10 {
		wg.Go(func() {
			key := fmt.Sprint("k", i)
			ok, err := setNX(ctx, b, key)
			if err == nil && !ok {
				err = errors.New("not set")
			}
			results[i] = err
		})
		waitFor(t, "the call queued", func() bool { return b.queued() == i+1 })
	}
	// Its release, queued after the SETs, must not overtake them.
	var released int
	var relErr error
	wg.Go(func() {
		released, relErr = releaseScript.Run(ctx, b, []string{"k0", "q"}, "token", "", "").Int()
	})
	waitFor(t, "the release queued", func() bool { return b.queued() == 11 })
	close(gate)
	wg.Wait()
	<-done
	for i, err := range results {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if relErr != nil {
		t.Errorf("release: %v", relErr)
	}
	if released != 1 || m.Exists("k0") || !m.Exists("k9") {
		t.Errorf("release = %d, k0 kept %v, k9 set %v: the release overtook its SET", released, m.Exists("k0"), m.Exists("k9"))
	}
	if h.pipelines.Load() != 1 || h.largest.Load() < 11 {
		t.Errorf("%d pipelines, the largest of %d commands; want the 11 queued calls in one", h.pipelines.Load(), h.largest.Load())
	}
	if b.inFlight() {
		t.Error("the batcher is still busy with nothing to send")
	}
}

// A queued call whose context ends returns at once and is never sent; the batcher goes on.
func TestBatcherDropsAQueuedCallWhoseContextEnded(t *testing.T) {
	m, gate, _, b := gated(t)
	done := stall(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := setNX(ctx, b, "late")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SET NX with its context ended while queued: %v", err)
	}
	close(gate)
	<-done
	if ok, err := setNX(context.Background(), b, "after"); !ok || err != nil {
		t.Fatalf("the next call: %v, %v", ok, err)
	}
	if m.Exists("late") {
		t.Fatal("the dropped call reached the node")
	}
}

// A lone caller, one call after another, never waits for a batch: every call goes on its own.
func TestLoneCallerIsNeverBatched(t *testing.T) {
	m := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { rc.Close() })
	h := new(counter)
	rc.AddHook(h)
	c, err := New([]redis.UniversalClient{rc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for i := range 30 {
		l, err := c.TryLock(ctx, fmt.Sprint("k", i), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if h.pipelines.Load() != 0 || h.direct.Load() < 60 {
		t.Fatalf("%d pipelines, %d calls on their own; want none and at least 60", h.pipelines.Load(), h.direct.Load())
	}
}

// 64 goroutines of one Client lock and unlock keys of their own on three nodes at once: every
// call succeeds, and calls to a node went out together.
func TestConcurrentCallsAreBatched(t *testing.T) {
	var nodes []redis.UniversalClient
	h := new(counter)
	for range 3 {
		m := miniredis.RunT(t)
		rc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
		t.Cleanup(func() { rc.Close() })
		rc.AddHook(h)
		nodes = append(nodes, rc)
	}
	c, err := New(nodes, WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 10 {
				l, err := c.TryLock(ctx, fmt.Sprint(g, ":", i), 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if h.pipelines.Load() == 0 || h.largest.Load() < 2 {
		t.Fatalf("%d pipelines, the largest of %d commands: nothing was batched", h.pipelines.Load(), h.largest.Load())
	}
	t.Logf("%d calls on their own, %d pipelines, the largest of %d commands", h.direct.Load(), h.pipelines.Load(), h.largest.Load())
}
