package redlockgocron_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockgocron"
)

func locker(t *testing.T, c *redlock.Client, ttl time.Duration) *redlockgocron.Locker {
	t.Helper()
	l, err := redlockgocron.NewLocker(c, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Three schedulers, each with a Client of its own, run one job every interval from a common
// start: every tick runs exactly once across them.
func TestLockerRunsEachTickOnce(t *testing.T) {
	const interval = 2 * time.Second
	ms := members(t, 3, servers(t, 3), nil, redlock.WithNodeTimeout(interval/20))
	var cs []*redlock.Client
	for _, m := range ms {
		cs = append(cs, m.c)
	}
	runTicks(t, cs, interval, interval/2, 4) // the longest ttl the interval allows, ten node timeouts
}

// The same with one node of three down (its process gone: connections to it are refused, and a
// go-redis client with its defaults dials again until the node timeout ends the call) and
// Clients made as a user makes them, with the default node timeout: every tick still runs
// exactly once.
func TestLockerRunsEachTickOnceWithANodeDown(t *testing.T) {
	addrs := servers(t, 3)
	down := client(addrs[2])
	down.Do(context.Background(), "SHUTDOWN", "NOSAVE")
	down.Close()
	var cs []*redlock.Client
	for range 3 {
		var nodes []redis.UniversalClient
		for _, a := range addrs {
			rc := redis.NewClient(&redis.Options{Addr: a})
			t.Cleanup(func() { rc.Close() })
			nodes = append(nodes, rc)
		}
		c, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	runTicks(t, cs, 2200*time.Millisecond, 1100*time.Millisecond, 5) // the default node timeout, 100 ms
}

// runTicks has a scheduler for each Client run one job every interval with a Locker of ttl
// from a common start, for ticks ticks, and fails t unless each ran exactly once.
func runTicks(t *testing.T, cs []*redlock.Client, interval, ttl time.Duration, ticks int) {
	t.Helper()
	start := time.Now().Add(300 * time.Millisecond).Truncate(100 * time.Millisecond)
	var mu sync.Mutex
	runs := map[int][]int{} // tick -> the schedulers that ran it
	var refused atomic.Int32
	for i, c := range cs {
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker(t, c, ttl)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.NewJob(gocron.DurationJob(interval),
			gocron.NewTask(func() {
				tick := int((time.Since(start) + interval/2) / interval)
				mu.Lock()
				runs[tick] = append(runs[tick], i)
				mu.Unlock()
			}),
			gocron.WithName("report"),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
				refused.Add(1)
				t.Logf("scheduler %d: %v", i, err)
			})))
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		defer s.Shutdown()
	}
	// The last tick fires at start + (ticks-1)*interval; it is decided within ttl/2.
	time.Sleep(time.Until(start.Add(time.Duration(ticks-1)*interval + interval/2)))
	mu.Lock()
	defer mu.Unlock()
	for tick := range ticks {
		if len(runs[tick]) != 1 {
			t.Errorf("tick %d ran on schedulers %v, want exactly one", tick, runs[tick])
		}
	}
	for tick, who := range runs {
		if tick >= ticks && len(who) > 1 {
			t.Errorf("tick %d ran on schedulers %v", tick, who)
		}
	}
	t.Logf("runs per tick: %v; runs refused: %d", runs, refused.Load())
}

// When the schedulers split the nodes, no TryLock wins, and yet exactly one Locker does.
func TestLockerSettlesASplitVote(t *testing.T) {
	const ttl = time.Second
	split := newSplitter(3)
	ms := members(t, 3, servers(t, 3), split, redlock.WithNodeTimeout(ttl/10))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// all has every member call lock at once, and returns how many won, and each one's error.
	all := func(key string, lock func(m *member) error) (won int, errs []error) {
		split.arm()
		errs = make([]error, len(ms))
		var wg sync.WaitGroup
		for i, m := range ms {
			wg.Go(func() { errs[i] = lock(m) })
		}
		wg.Wait()
		for _, err := range errs {
			if err == nil {
				won++
			} else if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("%s: %v", key, err)
			}
		}
		return won, errs
	}
	if won, errs := all("bare", func(m *member) error {
		_, err := m.c.TryLock(ctx, redlockgocron.KeyPrefix+"bare", ttl)
		return err
	}); won != 0 {
		t.Fatalf("the set-up does not split the vote: %d TryLock calls won; errors %q", won, errs)
	}
	for round := range 3 {
		key := fmt.Sprintf("job-%d", round)
		if won, errs := all(key, func(m *member) error {
			_, err := locker(t, m.c, ttl).Lock(ctx, key)
			return err
		}); won != 1 {
			t.Errorf("round %d: %d schedulers won the tick, want exactly one; errors %q", round, won, errs)
		}
	}
}

// Unlock leaves the mark: the same job is refused on another scheduler until the ttl passed.
func TestLockerLeavesTheMarkToExpire(t *testing.T) {
	const ttl = time.Second
	ms := members(t, 2, servers(t, 3), nil, redlock.WithNodeTimeout(ttl/10))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := locker(t, ms[0].c, ttl), locker(t, ms[1].c, ttl)
	lock, err := a.Lock(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "report"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("the same tick on another scheduler: %v, want ErrNotAcquired", err)
	}
	if _, err := b.Lock(ctx, "other"); err != nil {
		t.Fatalf("another job: %v", err)
	}
	time.Sleep(ttl)
	if _, err := b.Lock(ctx, "report"); err != nil {
		t.Fatalf("the next tick, after the ttl: %v", err)
	}
}

func TestNewLockerRefusesBadInputAndSendsNothing(t *testing.T) {
	nodes, c := minis(t, 3)
	before := commands(nodes)
	for _, tc := range []struct {
		name string
		c    *redlock.Client
		ttl  time.Duration
	}{
		{"nil client", nil, time.Second},
		{"zero ttl", c, 0},
		{"negative ttl", c, -time.Second},
		{"ttl in µs", c, 1500 * time.Microsecond},
		{"ttl within the drift", c, 2 * time.Millisecond},
		{"ttl under ten node timeouts", c, 999 * time.Millisecond}, // the default node timeout is 100 ms
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, err := redlockgocron.NewLocker(tc.c, tc.ttl); err == nil || l != nil {
				t.Fatalf("NewLocker = %v, %v; want an error", l, err)
			}
		})
	}
	_, err := redlockgocron.NewLocker(c, 400*time.Millisecond)
	if want := "ttl 400ms is too short for the Client's node timeout 100ms"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "at least 1s") {
		t.Errorf("NewLocker(400ms) = %v, want %q and the least ttl", err, want)
	}
	if _, err := redlockgocron.NewLocker(c, time.Second); err != nil {
		t.Errorf("NewLocker(1s) with a node timeout of 100ms: %v", err)
	}
	if n := commands(nodes) - before; n != 0 {
		t.Errorf("bad input sent %d commands", n)
	}
}

// The mark of a tick outlives the Client that ran it: a scheduler that starts the same tick
// after the first one's Client closed is refused.
func TestLockerMarkOutlivesTheClient(t *testing.T) {
	const ttl = 10 * time.Second
	ms := members(t, 2, servers(t, 3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := locker(t, ms[0].c, ttl).Lock(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	lock.Unlock(ctx) // the run ended; the mark stays for the ttl
	ms[0].c.Close()  // the first scheduler shuts down
	if _, err := locker(t, ms[1].c, ttl).Lock(ctx, "report"); err == nil {
		t.Fatal("the same tick ran again on another scheduler: the first one's Client released its mark on Close")
	}
}
