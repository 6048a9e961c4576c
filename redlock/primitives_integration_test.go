package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock"
)

// A semaphore of 3 permits over five real servers, 16 goroutines taking it for 3 s: never
// more than 3 inside at once, and at some moment 3.
func TestRealServersSemaphoreThreePermits(t *testing.T) {
	// Not parallel: its timing is for a machine running one test at a time.
	_, _, c := realCluster(t, redlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond))
	sem, err := c.Semaphore("pool", 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var inside, most, rounds atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := sem.Lock(ctx, 10*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				// Long against an acquisition on a busy machine, so that three holders meet.
				work(time.Duration(50+rand.IntN(50)) * time.Millisecond)
				inside.Add(-1)
				rounds.Add(1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d acquisitions, at most %d inside", rounds.Load(), most.Load())
	if most.Load() != 3 {
		t.Fatalf("at most %d holders inside at once, want exactly 3 at some moment and never more", most.Load())
	}
}

// For N = 5 and 2 permits, every subset of stopped nodes (SIGSTOP): a permit is taken iff at
// least Quorum() = 4 nodes run.
func TestRealServersSemaphoreEverySubsetOfStoppedNodes(t *testing.T) {
	// Not parallel: its short node timeout is for a machine running one test at a time.
	ss := redistest.StartN(t, 5)
	nodes := make([]redis.UniversalClient, len(ss))
	for i, s := range ss {
		// Clients that give up on a stopped node soon, so that every mask is quick.
		rc := redis.NewClient(&redis.Options{
			Addr: s.Addr, ReadTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond, MaxRetries: -1,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		t.Cleanup(func() { rc.Close() })
		nodes[i] = rc
	}
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for mask := range 1 << 5 {
		running := 5
		for i, s := range ss {
			if mask&(1<<i) != 0 {
				s.Pause(t)
				running--
			}
		}
		sem := semaphore(t, c, fmt.Sprintf("pool-%d", mask), 2) // late admissions stay apart
		if sem.Quorum() != 4 {
			t.Fatalf("Quorum = %d, want 4", sem.Quorum())
		}
		l, err := sem.TryLock(ctx, 10*time.Second)
		if want := running >= 4; (err == nil) != want {
			t.Fatalf("mask %05b (%d running): err = %v, want acquired = %v", mask, running, err, want)
		}
		if err == nil {
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("mask %05b: Unlock: %v", mask, err)
			}
		} else if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("mask %05b: %v does not wrap ErrNotAcquired", mask, err)
		}
		for i, s := range ss {
			if mask&(1<<i) != 0 {
				s.Resume()
			}
		}
	}
}

// 8 readers and 2 writers on five real servers: readers overlap, a writer overlaps nobody.
func TestRealServersRWMutexReadersShareWritersExclude(t *testing.T) {
	t.Parallel()
	_, _, c := realCluster(t, redlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond))
	rw, err := c.RWMutex("doc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var readers, writers, mostReaders, clashes, writes atomic.Int64
	contend := func(lock func(context.Context, time.Duration) (*redlock.Lock, error), writer bool) {
		for ctx.Err() == nil {
			l, err := lock(ctx, 10*time.Second)
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			if writer {
				if writers.Add(1) != 1 || readers.Load() != 0 {
					clashes.Add(1)
				}
				writes.Add(1)
			} else {
				n := readers.Add(1)
				if writers.Load() != 0 {
					clashes.Add(1)
				}
				for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
				}
			}
			work(time.Duration(1+rand.IntN(5)) * time.Millisecond)
			if writer {
				writers.Add(-1)
			} else {
				readers.Add(-1)
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Error(err)
			}
			if writer {
				// A waiting writer holds new readers back, so that writers back to back
				// could keep every reader out: writers pause between writes, as real ones do.
				work(time.Duration(10+rand.IntN(10)) * time.Millisecond)
			}
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { contend(rw.RLock, false) })
	}
	for range 2 {
		wg.Go(func() { contend(rw.Lock, true) })
	}
	wg.Wait()
	t.Logf("at most %d readers at once, %d writes", mostReaders.Load(), writes.Load())
	if clashes.Load() != 0 {
		t.Fatalf("a writer overlapped someone %d times", clashes.Load())
	}
	if mostReaders.Load() < 2 || writes.Load() == 0 {
		t.Fatalf("readers never overlapped (at most %d at once) or nobody wrote (%d)", mostReaders.Load(), writes.Load())
	}
}

// A writer waiting behind a continuous stream of readers (of another process, standing in as
// another Client) gets in: its mark stops new readers. (With the mark taken out of write.lua,
// this test fails: the writer waits out its 10 s.)
func TestRealServersRWMutexWriterNotStarvedByReaders(t *testing.T) {
	_, nodes, readersClient := realCluster(t, redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
	writerClient, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer writerClient.Close()
	rrw := rwMutex(t, readersClient, "doc")
	wrw := rwMutex(t, writerClient, "doc")
	stream, stop := context.WithCancel(context.Background())
	var readers atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			// Each reader takes its next read lock before it leaves the last, so that the
			// readers never all leave at once: without the writer's mark, it would never get in.
			var l *redlock.Lock
			for stream.Err() == nil {
				if l == nil {
					var err error
					if l, err = rrw.RLock(stream, 10*time.Second); err != nil {
						continue
					}
					readers.Add(1)
				}
				work(time.Duration(10+rand.IntN(20)) * time.Millisecond)
				next, err := rrw.TryRLock(stream, 10*time.Second)
				if err != nil {
					readers.Add(-1)
				}
				l.Unlock(context.Background())
				l = next
			}
			if l != nil {
				readers.Add(-1)
				l.Unlock(context.Background())
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	redistest.Eventually(t, "readers hold the lock", func() bool { return readers.Load() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	w, err := wrw.Lock(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("the writer starved behind the readers: %v", err)
	}
	if n := readers.Load(); n != 0 {
		t.Errorf("%d readers inside beside the writer", n)
	}
	t.Logf("the writer got in after %v", time.Since(start))
	w.Unlock(ctx)
}

// 8 goroutines LockAll random sets of 3 of 6 keys: no key is ever held twice, and all finish.
func TestRealServersLockAllOverlappingSets(t *testing.T) {
	t.Parallel()
	_, _, c := realCluster(t, redlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond))
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	held := map[string]bool{}
	var clashes, done atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 15 {
				set := make([]string, 0, 3)
				for _, i := range rng.Perm(len(keys))[:3] {
					set = append(set, keys[i])
				}
				l, err := c.LockAll(ctx, set, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, k := range set {
					if held[k] {
						clashes.Add(1)
					}
					held[k] = true
				}
				mu.Unlock()
				work(time.Millisecond)
				mu.Lock()
				for _, k := range set {
					held[k] = false
				}
				mu.Unlock()
				if err := l.Unlock(context.Background()); err != nil {
					t.Error(err)
				}
			}
			done.Add(1)
		})
	}
	wg.Wait()
	if clashes.Load() != 0 || done.Load() != 8 {
		t.Fatalf("%d keys held twice; %d of 8 goroutines finished", clashes.Load(), done.Load())
	}
}

// LockAll over a set with one key held by Lock fails, and leaves none of its keys on any node.
func TestRealServersLockAllRefusedLeavesNothing(t *testing.T) {
	_, nodes, c := realCluster(t)
	ctx := context.Background()
	held, err := c.Lock(ctx, "b", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.LockAll(short, []string{"a", "b", "c"}, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("LockAll over a held key: %v", err)
	}
	redistest.Eventually(t, "no node keeps a or c", func() bool {
		for _, n := range nodes {
			if k, err := n.Exists(ctx, "a", "c").Result(); err != nil || k != 0 {
				return false
			}
		}
		return true
	})
	held.Unlock(ctx)
}

// Resume from a second Client (another process stand-in) extends and unlocks the first one's
// lock; a wrong token gets ErrNotHeld.
func TestRealServersResumeFromAnotherClient(t *testing.T) {
	_, nodes, first := realCluster(t)
	second, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ctx := context.Background()
	l, err := first.Lock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Resume(ctx, "job", "not-the-token", 10*time.Second); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("a wrong token: %v", err)
	}
	r, err := second.Resume(ctx, "job", l.Token(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A quorum, not every node: the first Lock was granted at a quorum, and its SET to a node
	// that answered late may land after the Resume's extension there.
	redistest.Eventually(t, "a quorum of nodes gives job the resumed ttl of 30s", func() bool {
		resumed := 0
		for _, n := range nodes {
			if ttl, err := n.PTTL(ctx, "job").Result(); err == nil && ttl > 10*time.Second {
				resumed++
			}
		}
		return resumed >= quorum.Of(len(nodes))
	})
	if err := r.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.TryLock(ctx, "job", 10*time.Second); err != nil {
		t.Fatalf("after the resumed lock's Unlock: %v", err)
	}
}
