package redlockfence_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockfence"
)

// A tally counts what the holders of TestRestarts saw.
type tally struct {
	holds, lockFailures, pauses atomic.Int64
	accepted, refused           [3]atomic.Int64 // by resource, in the order of names
}

// 8 Clients, each over connections of its own, take the lock on 5 redis-servers in turn and
// write through the three guards, while the servers restart one after another, each losing its
// data, one every 1.5 ttl (fencing tokens assume no two nodes lose their data within one ttl).
// Client 0, every third time it holds the lock, is paused until a later holder has written,
// then writes. Every resource's accepted tokens, in commit order, never decrease, and the
// paused holder is refused by all three.
func TestRestarts(t *testing.T) {
	servers := redistest.StartN(t, 5)
	addrs := redistest.Addrs(servers)
	res := newResources(t)
	ctx := deadline(t)
	const clients, ttl, restarts = 8, time.Second, 5
	var tl tally
	errs := make(chan error, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt() // also when a restart fails t
	for i := range clients {
		c := lockClient(t, addrs)
		wg.Go(func() { hold(ctx, c, i, res, &tl, stop, errs) })
	}
	for i := range restarts {
		time.Sleep(ttl * 3 / 2)
		servers[i%len(servers)].RestartEmpty(t)
		t.Logf("node %d restarted, its data lost", i%len(servers))
	}
	time.Sleep(ttl)
	halt()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	t.Logf("%d holds by %d Clients (%d Lock calls failed), %d of them paused past their validity",
		tl.holds.Load(), clients, tl.lockFailures.Load(), tl.pauses.Load())
	for i, log := range res.logs(t) {
		acc, ref := tl.accepted[i].Load(), tl.refused[i].Load()
		t.Logf("%s: %d writes accepted, %d refused as stale", names[i], acc, ref)
		if int64(len(log)) != acc {
			t.Errorf("%s: %d writes committed, %d accepted", names[i], len(log), acc)
		}
		for j := 1; j < len(log); j++ {
			if log[j] < log[j-1] {
				t.Errorf("%s: commit %d has token %d after token %d", names[i], j+1, log[j], log[j-1])
			}
		}
		if acc < restarts {
			t.Errorf("%s: only %d writes accepted in %d restarts", names[i], acc, restarts)
		}
	}
	if tl.pauses.Load() < 2 {
		t.Errorf("client 0 was paused %d times, want 2 or more", tl.pauses.Load())
	}
}

// hold is client i of TestRestarts: it takes the lock and writes with its token until stop.
func hold(ctx context.Context, c *redlock.Client, i int, res *resources, tl *tally, stop <-chan struct{}, errs chan<- error) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := c.Lock(lctx, "acct", time.Second)
		cancel()
		if err != nil {
			tl.lockFailures.Add(1)
			continue
		}
		tl.holds.Add(1)
		paused := i == 0 && n%3 == 2
		if paused {
			tl.pauses.Add(1)
			if err := untilOvertaken(ctx, res, l.Fence()); err != nil {
				errs <- err
			}
		}
		for k, err := range res.write(ctx, l.Fence(), "client "+strconv.Itoa(i)) {
			switch {
			case err == nil && paused:
				errs <- fmt.Errorf("%s accepted the write of a holder paused until a later one wrote", names[k])
			case err == nil:
				tl.accepted[k].Add(1)
			case errors.Is(err, redlockfence.ErrStale):
				tl.refused[k].Add(1)
			default:
				errs <- fmt.Errorf("%s: %w", names[k], err)
			}
		}
		l.Unlock(ctx) // after a pause, the lock is someone else's: ErrNotHeld
	}
}

// untilOvertaken waits until the Redis resource, written last, has accepted a token above
// token: then every resource has.
func untilOvertaken(ctx context.Context, res *resources, token uint64) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		v, _ := res.rc.Get(ctx, redlockfence.TokenKeyPrefix+"{acct}").Uint64()
		if v > token {
			return nil
		}
	}
	return fmt.Errorf("no holder wrote with a token above %d within 10s of client 0's pause", token)
}
