package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A prefix goes before every key the Client stores, so that an ACL can give a Client's user
// the prefix's keys and channels alone ("~app:* &app:*"). Lock.Key stays as given.
func ExampleWithKeyPrefix() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithKeyPrefix("app:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Key:", lock.Key())
	holding := 0
	for _, n := range nodes {
		if v, _ := n.Get(ctx, "app:orders:42").Result(); v == lock.Token() {
			holding++
		}
	}
	fmt.Println("nodes storing app:orders:42 with the lock's token:", holding >= 2)
	fmt.Println("nodes storing orders:42:", nodes[0].Exists(ctx, "orders:42").Val())
	lock.Unlock(ctx)
	// Output:
	// Key: orders:42
	// nodes storing app:orders:42 with the lock's token: true
	// nodes storing orders:42: 0
}

// At Debug level the Client logs every attempt that failed, with why. The time, the votes and
// the nodes' errors are left out here so that the output is the same on every run.
func ExampleWithLogger() {
	nodes, stop := masters(3)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "votes" || a.Key == "err" {
				return slog.Attr{}
			}
			return a
		},
	}))
	holder, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer holder.Close()
	locker, err := redlock.New(nodes, redlock.WithLogger(logger))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	held, err := holder.Lock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locker.TryLock(ctx, "report", 10*time.Second)
	fmt.Println("refused:", errors.Is(err, redlock.ErrNotAcquired))
	held.Unlock(ctx)
	// Output:
	// level=DEBUG msg="redlock: not acquired" kind=mutex key=report
	// refused: true
}

// An Observer hears of every call as it ends, and of every lock when it ends; nil hooks are
// skipped. The redlockotel module makes metrics and spans of the same reports.
func ExampleWithObserver() {
	nodes, stop := masters(3)
	defer stop()
	ended := make(chan locktrace.Holding, 1)
	observer := locktrace.Observer{
		End: func(_ context.Context, call locktrace.Call, r locktrace.Return) {
			fmt.Println(call.Op, call.Kind, call.Key, "quorum", call.Quorum, "outcome", r.Outcome)
		},
		Ended: func(h locktrace.Holding) { ended <- h },
	}
	locker, err := redlock.New(nodes, redlock.WithObserver(observer))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.TryLock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	lock.Unlock(ctx)
	h := <-ended
	fmt.Println("a", h.Kind, "lock ended; lost:", h.Lost)
	// Output:
	// TryLock mutex report quorum 2 outcome ok
	// Unlock mutex report quorum 2 outcome ok
	// a mutex lock ended; lost: false
}

// A holder that crashed never announces a release: its lock expires with its ttl, and a
// waiter finds the key free on one of its retries, paced by WithRetryDelay.
func ExampleWithRetryDelay() {
	nodes, stop := masters(3)
	defer stop()
	ctx := context.Background()

	crashed, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	gone, err := crashed.Lock(ctx, "report", 300*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	gone.Orphan(ctx) // left to expire, as a crash leaves it
	crashed.Close()

	locker, err := redlock.New(nodes, redlock.WithRetryDelay(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	lock, err := locker.Lock(ctx, "report", 10*time.Second)
	fmt.Println("acquired:", err)
	fmt.Println("after the crashed holder's validity:", time.Now().After(gone.Until()))
	lock.Unlock(ctx)
	// Output:
	// acquired: <nil>
	// after the crashed holder's validity: true
}

// stalled starts a server that takes connections and never answers, as a stopped Redis
// server (SIGSTOP) or a black-holed network would.
func stalled() (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}

// The node timeout bounds how long a call waits for one node, whatever its go-redis client's
// own timeouts are: here two of three nodes never answer, and TryLock gives up on them after
// 200ms.
func ExampleWithNodeTimeout() {
	nodes, stop := masters(1)
	defer stop()
	for range 2 {
		addr, unstall := stalled()
		defer unstall()
		silent := redis.NewClient(&redis.Options{Addr: addr})
		defer silent.Close()
		nodes = append(nodes, silent)
	}
	locker, err := redlock.New(nodes, redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	start := time.Now()
	_, err = locker.TryLock(context.Background(), "report", 10*time.Second)
	fmt.Println("not acquired:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println("within a second:", time.Since(start) < time.Second)
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var nodeErr *redlock.NodeError
		if errors.As(e, &nodeErr) {
			fmt.Printf("node %d: %v\n", nodeErr.Node, nodeErr.Err)
		}
	}
	// Output:
	// not acquired: true
	// within a second: true
	// node 1: no reply within 200ms
	// node 2: no reply within 200ms
}

// fixedClock reads the same time whenever it is asked, and waits as the real clock does: a
// lock's validity then shows exactly.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                                { return c.now }
func (fixedClock) NewTimer(d time.Duration) *time.Timer            { return time.NewTimer(d) }
func (fixedClock) AfterFunc(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

// The Client reads every time through its clock: the start of an attempt, the validity, the
// pauses between retries. Tests and simulations pass a clock they steer.
func ExampleWithClock() {
	nodes, stop := masters(3)
	defer stop()
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	locker, err := redlock.New(nodes, redlock.WithClock(fixedClock{start}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("valid until", lock.Until().Format("15:04:05.000"))
	lock.Unlock(ctx)
	// Output: valid until 15:04:14.898
}

// The drift factor is the share of the ttl given up for clocks that run at different rates
// (plus 2ms for Redis's millisecond expiry): of a 10s lock, 1% by default leaves 9.898s,
// 5% leaves 9.498s.
func ExampleWithDriftFactor() {
	nodes, stop := masters(3)
	defer stop()
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	ctx := context.Background()
	for _, f := range []float64{0.01, 0.05} {
		locker, err := redlock.New(nodes, redlock.WithDriftFactor(f), redlock.WithClock(fixedClock{start}))
		if err != nil {
			fmt.Println(err)
			return
		}
		lock, err := locker.Lock(ctx, "report", 10*time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("drift factor %v: valid for %v\n", f, lock.Until().Sub(start))
		lock.Unlock(ctx)
		locker.Close()
	}
	_, err := redlock.New(nodes, redlock.WithDriftFactor(0.5))
	fmt.Println(err)
	// Output:
	// drift factor 0.01: valid for 9.898s
	// drift factor 0.05: valid for 9.498s
	// redlock: drift factor 0.5 out of range [0, 0.5)
}

// The owner is stored with each lock's token, so that Inspect (and redlock status) can say
// who holds a key.
func ExampleWithOwner() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithOwner("billing-7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "invoices", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("token ends with the owner:", strings.HasSuffix(lock.Token(), "~billing-7"))
	in, err := locker.Inspect(ctx, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", in.Held, "by", in.Owner)
	lock.Unlock(ctx)

	_, err = redlock.New(nodes, redlock.WithOwner(""))
	fmt.Println(err)
	// Output:
	// token ends with the owner: true
	// held: true by billing-7
	// redlock: owner "" must be 1 to 128 bytes of printable text
}
