package goredisnode

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// A call that finds another in flight is queued behind it in the same step: were it queued
// after, the call in flight could end in between, find nobody queued and leave the node idle,
// and the call would wait for a turn that never comes until its context ended. One call more at
// a time than go out on their own, to a node that answers at once, again and again: every call
// is answered, and the batcher is idle after each round of them. (Before the fix, a call in a
// few thousand rounds waited out its deadline, as a lock's node call waited out the node
// timeout.)
func TestBatcherCallQueuedBehindOneEndingIsSent(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer c.Close()
	b := &batcher{node: c}
	rounds := 0
	for start := time.Now(); rounds < 20000 && time.Since(start) < 5*time.Second; rounds++ {
		var wg sync.WaitGroup
		errs := make(chan error, maxAlone+1)
		for range maxAlone + 1 { // one more than go out on their own: it queues
			wg.Go(func() {
				// Far longer than a reply from an in-process server takes under any load: a
				// call that waits it out was never sent.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := b.process(ctx, redis.NewCmd(ctx, "ping")); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a call to a node that answers at once: %v", rounds, err)
		}
		b.mu.Lock()
		busy, queued := b.batching || b.alone != 0, len(b.queue)
		b.mu.Unlock()
		if busy || queued != 0 {
			t.Fatalf("round %d answered, and the batcher is left busy %v with %d calls queued", rounds, busy, queued)
		}
	}
	t.Logf("%d rounds", rounds)
}
