package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// A call chain that takes a lock and then calls code that takes the same lock re-enters it
// through the context, instead of waiting for itself. A context without the lock waits like
// any other caller.
func ExampleLock_Context() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	// audit locks the account; so does transfer, which calls it.
	audit := func(ctx context.Context) error {
		return locker.Do(ctx, "account:7", 10*time.Second, func(ctx context.Context) error {
			fmt.Println("auditing account 7")
			return nil
		})
	}
	err = locker.Do(ctx, "account:7", 10*time.Second, func(ctx context.Context) error {
		fmt.Println("transferring from account 7")
		return audit(ctx) // ctx carries the lock: audit re-enters it, sending nothing
	})
	fmt.Println("transfer:", err)

	// Outside Do, Lock.Context puts the lock in a context.
	lock, err := locker.Lock(ctx, "account:7", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	inner, err := locker.TryLock(lock.Context(ctx), "account:7", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the same lock:", inner.Token() == lock.Token())
	fmt.Println("inner Unlock only counts down:", inner.Unlock(ctx))
	_, err = locker.TryLock(ctx, "account:7", 10*time.Second)
	fmt.Println("a context without the lock is refused:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println("the holder's Unlock releases it:", lock.Unlock(ctx))
	// Output:
	// transferring from account 7
	// auditing account 7
	// transfer: <nil>
	// the same lock: true
	// inner Unlock only counts down: <nil>
	// a context without the lock is refused: true
	// the holder's Unlock releases it: <nil>
}

// At most once: an order form carries a one-time token, and a submission of it must count
// once however often it arrives (a double click, a retry after a timeout). The first submitter
// takes "submit:"+token for the token's lifetime and orphans it: the mark stays on the nodes
// until it expires. A refused submitter is a duplicate when Inspect finds a quorum holding the
// key under one token twice, a moment apart: a refused attempt's own keys, or a split vote's,
// hold it only until their roll-backs land (twice the node timeout at most). Otherwise nobody
// holds the mark, and it tries again.
func ExampleLock_Orphan_atMostOnce() {
	nodes, stop := masters(5)
	defer stop()
	locker, err := redlock.New(nodes) // node timeout 100ms
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	submit := func(ctx context.Context, token string) (accepted bool, err error) {
		key, held := "submit:"+token, ""
		for try := 0; ; try++ {
			mark, err := locker.TryLock(ctx, key, 30*time.Minute)
			if err == nil {
				// Never released: a later submission finds it until it expires. An error
				// here (Close released it, say) means the form does not count: say so.
				if err := mark.Orphan(ctx); err != nil {
					return false, err
				}
				return true, nil
			}
			if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
				return false, err
			}
			seen, err := locker.Inspect(ctx, key)
			switch {
			case err == nil && seen.Held && seen.Token == held:
				return false, nil // a duplicate: the mark is still there
			case err == nil && seen.Held:
				held = seen.Token
				time.Sleep(200 * time.Millisecond) // past any roll-back, then look again
			default: // a split vote: try again after a random pause that doubles every try
				held = ""
				time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) << min(try, 6))))
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var orders, duplicates atomic.Int32
	var wg sync.WaitGroup
	for range 10 { // the same form, sent 10 times at once
		wg.Go(func() {
			switch accepted, err := submit(ctx, "form-8f14e45f"); {
			case err != nil:
				fmt.Println(err)
			case accepted:
				orders.Add(1)
			default:
				duplicates.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Println("orders:", orders.Load(), "duplicates refused:", duplicates.Load())
	// Output: orders: 1 duplicates refused: 9
}
