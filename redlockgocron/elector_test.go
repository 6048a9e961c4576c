package redlockgocron_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockgocron"
)

// checks records every IsLeader answer of several Electors in one order: each answer gets the
// number of the last answer begun before it was asked (from) and of the first begun after it
// returned (to). When a's answer ended before b's was asked, a.to <= b.from.
type checks struct {
	seq atomic.Int64
	mu  sync.Mutex
	yes []check // the nil answers
}

type check struct {
	who      int
	from, to int64
}

// A checked is an Elector whose answers are recorded.
type checked struct {
	*redlockgocron.Elector
	who int
	log *checks
}

func (c checked) IsLeader(ctx context.Context) error {
	from := c.log.seq.Add(1)
	err := c.Elector.IsLeader(ctx)
	to := c.log.seq.Add(1)
	if err == nil {
		c.log.mu.Lock()
		c.log.yes = append(c.log.yes, check{c.who, from, to})
		c.log.mu.Unlock()
	} else if !errors.Is(err, redlockgocron.ErrNotLeader) {
		panic(err)
	}
	return err
}

// leaders returns who answered yes at any time, in the order they first did so.
func (l *checks) leaders() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.yes {
		if !slices.Contains(out, c.who) {
			out = append(out, c.who)
		}
	}
	return out
}

// overlap looks for someone who answered yes, then another, then the first again: two terms
// that overlapped, given that each of the candidates the test tells apart wins at most one term.
// It returns the three answers when it finds them. (Answers asked at the same time from several
// goroutines tell nothing: their order is unknown.)
func (l *checks) overlap() (x1, y, x2 check, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// For each candidate, its answer that ended first and the one asked last.
	first, last := map[int]check{}, map[int]check{}
	for _, c := range l.yes {
		if f, ok := first[c.who]; !ok || c.to < f.to {
			first[c.who] = c
		}
		if z, ok := last[c.who]; !ok || c.from > z.from {
			last[c.who] = c
		}
	}
	for _, y := range l.yes {
		for who, f := range first {
			if who != y.who && f.to < y.from && y.to < last[who].from {
				return f, y, last[who], true
			}
		}
	}
	return check{}, check{}, check{}, false
}

func elector(t *testing.T, ctx context.Context, c *redlock.Client, value string, ttl time.Duration) *redlockgocron.Elector {
	t.Helper()
	e, err := redlockgocron.NewElector(ctx, c, "scheduler", value, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { <-e.Done() }) // after ctx's cancel and the Client's Close, run before
	return e
}

// Three schedulers with Electors: only the leader runs jobs. When the leader's Client closes,
// another takes over within the ttl and runs them, and the old leader runs none.
func TestElectorOnlyTheLeaderRunsJobs(t *testing.T) {
	const ttl = time.Second
	ms := members(t, 3, servers(t, 3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := &checks{}
	var mu sync.Mutex
	var runs []int // who ran, in order
	ran := func(who int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, w := range runs {
			if w == who {
				n++
			}
		}
		return n
	}
	electors := make([]*redlockgocron.Elector, len(ms))
	for i, m := range ms {
		electors[i] = elector(t, ctx, m.c, fmt.Sprint("scheduler-", i), ttl)
		s, err := gocron.NewScheduler(gocron.WithDistributedElector(checked{electors[i], i, log}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.NewJob(gocron.DurationJob(50*time.Millisecond), gocron.NewTask(func() {
			mu.Lock()
			runs = append(runs, i)
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		defer s.Shutdown()
	}
	var first int
	within(t, 10*time.Second, "a leader runs 5 jobs", func() bool {
		for i := range ms {
			if ran(i) >= 5 {
				first = i
				return true
			}
		}
		return false
	})
	for i, e := range electors {
		if err := e.IsLeader(ctx); (err == nil) != (i == first) {
			t.Fatalf("scheduler %d ran the jobs; scheduler %d's IsLeader: %v", first, i, err)
		}
	}
	closed := time.Now()
	ms[first].c.Close()
	<-electors[first].Done()
	next := -1
	within(t, ttl+2*time.Second, "another scheduler leads after the leader's Client closed", func() bool {
		for i, e := range electors {
			if i != first && e.IsLeader(ctx) == nil {
				next = i
				return true
			}
		}
		return false
	})
	t.Logf("scheduler %d led %v after scheduler %d's Client closed", next, time.Since(closed), first)
	within(t, 10*time.Second, "the new leader runs 5 jobs", func() bool { return ran(next) >= 5 })
	if err := electors[first].IsLeader(ctx); err == nil {
		t.Error("the closed scheduler still says it leads")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := log.leaders(); !slices.Equal(got, []int{first, next}) {
		t.Errorf("leaders in order: %v, want [%d %d]; runs %v", got, first, next, runs)
	}
	if x1, y, x2, ok := log.overlap(); ok {
		t.Errorf("two leaders at once: answers %+v, %+v, %+v", x1, y, x2)
	}
}

// When the leader resigns (its ctx ends), the next candidate leads at once; with two
// candidates, leadership goes back and forth, one leader at a time.
func TestElectorFollowsAResignation(t *testing.T) {
	const ttl = 5 * time.Second
	ms := members(t, 3, servers(t, 3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := &checks{}
	var order []int
	for round := range 4 {
		// Two candidates each round, a fresh one of each member: the leader resigns, the
		// other follows.
		var es []checked
		var stops []context.CancelFunc
		for i, m := range ms[:2] {
			cctx, stop := context.WithCancel(ctx)
			stops = append(stops, stop)
			es = append(es, checked{elector(t, cctx, m.c, fmt.Sprint("m", i), ttl), 2*round + i, log})
		}
		leader := -1
		within(t, ttl, "a leader", func() bool {
			for i, e := range es {
				if e.IsLeader(ctx) == nil {
					leader = i
					return true
				}
			}
			return false
		})
		order = append(order, leader)
		stops[leader]()
		<-es[leader].Done()
		if err := es[leader].IsLeader(ctx); err == nil {
			t.Fatalf("round %d: the resigned leader still says it leads", round)
		}
		other := 1 - leader
		// At once; within the ttl (and a retry) when the resignation reached too few nodes.
		within(t, ttl+2*time.Second, "the other candidate follows", func() bool {
			return es[other].IsLeader(ctx) == nil
		})
		stops[other]()
		<-es[other].Done()
	}
	if x1, y, x2, ok := log.overlap(); ok {
		t.Errorf("two leaders at once: answers %+v, %+v, %+v", x1, y, x2)
	}
	t.Logf("first leaders of the rounds: %v", order)
}

// A leader cut off from every node (a crash, as the others see it) is followed within the ttl
// of its last renewal, and says it no longer leads before the follower does. Once it is back,
// it campaigns again, and leads when the follower resigns.
func TestElectorFollowsACrashedLeader(t *testing.T) {
	const ttl = time.Second
	ms := members(t, 2, servers(t, 3), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := &checks{}
	var es []checked
	var stops []context.CancelFunc
	for i, value := range []string{"a", "b"} {
		cctx, stop := context.WithCancel(ctx)
		stops = append(stops, stop)
		es = append(es, checked{elector(t, cctx, ms[i].c, value, ttl), i, log})
	}
	leader := -1
	within(t, 10*time.Second, "a leader", func() bool {
		for i, e := range es {
			if e.IsLeader(ctx) == nil {
				leader = i
				return true
			}
		}
		return false
	})
	other := 1 - leader
	crashed := time.Now()
	ms[leader].crash()
	// Ask both all along, so that a stale yes of the crashed leader would show.
	within(t, 2*ttl+2*time.Second, "the other candidate follows the crashed leader", func() bool {
		es[leader].IsLeader(ctx)
		return es[other].IsLeader(ctx) == nil
	})
	t.Logf("followed %v after the crash (ttl %v)", time.Since(crashed), ttl)
	for range 100 {
		es[leader].IsLeader(ctx)
		es[other].IsLeader(ctx)
		time.Sleep(time.Millisecond)
	}
	if x1, y, x2, ok := log.overlap(); ok {
		t.Errorf("two leaders at once: answers %+v, %+v, %+v", x1, y, x2)
	}
	ms[leader].heal()
	stops[other]()
	<-es[other].Done()
	within(t, 2*ttl+2*time.Second, "the old leader, back, leads again after the other resigned", func() bool {
		return es[leader].IsLeader(ctx) == nil
	})
}

// A pausedClock is the clock of a process that was stopped and has just continued: Now has
// moved on by the pause at once, while its timers still wait in real time.
type pausedClock struct{ paused atomic.Int64 }

func (c *pausedClock) Now() time.Time { return time.Now().Add(time.Duration(c.paused.Load())) }

func (c *pausedClock) NewTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }

func (c *pausedClock) AfterFunc(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

// A leader whose process was stopped past its term's end is not the leader when it continues,
// before any of its timers has run: IsLeader reads the clock.
func TestElectorPausedPastItsTermIsNotLeader(t *testing.T) {
	const ttl = 10 * time.Second // its timers are seconds away when the test asks
	clk := &pausedClock{}
	_, c := minis(t, 3, redlock.WithClock(clk))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := elector(t, ctx, c, "a", ttl)
	within(t, 5*time.Second, "a leader", func() bool { return e.IsLeader(ctx) == nil })
	clk.paused.Add(int64(2 * ttl))
	if err := e.IsLeader(ctx); !errors.Is(err, redlockgocron.ErrNotLeader) {
		t.Fatalf("IsLeader = %v after a pause past the term's end, want ErrNotLeader", err)
	}
}

func TestNewElectorRefusesBadInputAndSendsNothing(t *testing.T) {
	nodes, c := minis(t, 3)
	ctx := context.Background()
	before := commands(nodes)
	for _, tc := range []struct {
		name, election, value string
		c                     *redlock.Client
		ttl                   time.Duration
	}{
		{"nil client", "e", "v", nil, time.Second},
		{"empty name", "", "v", c, time.Second},
		{"empty value", "e", "", c, time.Second},
		{"zero ttl", "e", "v", c, 0},
		{"ttl in µs", "e", "v", c, 1500 * time.Microsecond},
		{"ttl within the drift", "e", "v", c, 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e, err := redlockgocron.NewElector(ctx, tc.c, tc.election, tc.value, tc.ttl); err == nil || e != nil {
				t.Fatalf("NewElector = %v, %v; want an error", e, err)
			}
		})
	}
	if n := commands(nodes) - before; n != 0 {
		t.Errorf("bad input sent %d commands", n)
	}
}
