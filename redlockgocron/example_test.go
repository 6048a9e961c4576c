package redlockgocron_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockgocron"
)

// masters starts n in-memory Redis servers standing in for independent masters, so that the
// examples run anywhere; with real servers, pass clients for their addresses instead.
func masters(n int) (nodes []redis.UniversalClient, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			panic(err)
		}
		m.ClockTTL(true) // keys expire with the wall clock, as on a real server
		servers = append(servers, m)
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: m.Addr()}))
	}
	return nodes, func() {
		for i := range nodes {
			nodes[i].Close()
			servers[i].Close()
		}
	}
}

// Two schedulers, as two processes would have, each with a Client of its own, share a job
// through their Lockers: it runs on one of them.
func ExampleNewLocker() {
	nodes, stop := masters(3)
	defer stop()
	outcomes := make(chan string, 2)
	for range 2 {
		c, err := redlock.New(nodes)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer c.Close()
		// Each tick of a job is marked for the ttl: at most half the job's interval.
		locker, err := redlockgocron.NewLocker(c, 10*time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Shutdown()
		_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
			gocron.NewTask(func() { fmt.Println("sending the report") }),
			gocron.WithName("send-report"),
			gocron.WithEventListeners(
				gocron.AfterJobRuns(func(uuid.UUID, string) { outcomes <- "ran" }),
				gocron.AfterLockError(func(uuid.UUID, string, error) { outcomes <- "skipped" })))
		if err != nil {
			fmt.Println(err)
			return
		}
		s.Start()
	}
	count := map[string]int{}
	for range 2 {
		select {
		case o := <-outcomes:
			count[o]++
		case <-time.After(20 * time.Second): // a refused scheduler waits at most ttl/2
			fmt.Println("no outcome")
			return
		}
	}
	fmt.Println("ran:", count["ran"], "skipped:", count["skipped"])
	// Output:
	// sending the report
	// ran: 1 skipped: 1
}

// The first candidate leads and its scheduler runs the jobs; when its context ends it resigns,
// and the next candidate leads at once.
func ExampleNewElector() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	elector, err := redlockgocron.NewElector(ctx, c, "reports", "10.0.0.7:8080", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Shutdown()
	ran := make(chan struct{})
	_, err = s.NewJob(gocron.DurationJob(10*time.Millisecond),
		gocron.NewTask(func() { fmt.Println("the leader runs the job") }),
		gocron.WithLimitedRuns(1),
		gocron.WithEventListeners(gocron.AfterJobRuns(func(uuid.UUID, string) { close(ran) })))
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Start()
	<-ran // the scheduler asks the Elector before each run, and skips it until it leads

	// Another process: a candidate waiting in line.
	other, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()
	otherCtx, stopOther := context.WithCancel(context.Background())
	defer stopOther()
	next, err := redlockgocron.NewElector(otherCtx, other, "reports", "10.0.0.8:8080", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the other leads:", next.IsLeader(otherCtx) == nil)
	cancel() // the first resigns: the other leads at once
	<-elector.Done()
	fmt.Println("the first leads:", elector.IsLeader(ctx) == nil)
	// At once, unless the resignation reached too few nodes: then when the term expires.
	for deadline := time.Now().Add(15 * time.Second); next.IsLeader(otherCtx) != nil && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("the other leads:", next.IsLeader(otherCtx) == nil)
	e, err := other.Election("reports", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	if l, err := e.Leader(otherCtx); err == nil {
		fmt.Println("the leader is", l.Value)
	}
	stopOther()
	<-next.Done()
	// Output:
	// the leader runs the job
	// the other leads: false
	// the first leads: false
	// the other leads: true
	// the leader is 10.0.0.8:8080
}
