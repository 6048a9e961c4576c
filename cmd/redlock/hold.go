package main

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// holder keeps a lock extended while the command runs: when a third of the ttl is left, and
// again soon after a failed extension, until stopped. The library decides when the lock is
// lost (Lock.Lost): its validity passed without a successful extension, or an extension found
// the key gone from a majority. Client.Do keeps a lock the same way, but Do also acquires, with
// one context for the wait and for fn, and exec bounds the wait alone (--wait).
type holder struct {
	stop context.CancelFunc // ends the loop, and the extension in flight
	done chan struct{}

	mu      sync.Mutex
	lastErr error // the last failed extension's error
}

func hold(lock *redlock.Lock, ttl time.Duration) *holder {
	h := &holder{done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	h.stop = stop
	lost := lock.Lost()
	pause := func(d time.Duration) bool {
		t := time.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-lost:
			return false
		case <-t.C:
			return true
		}
	}
	go func() {
		defer close(h.done)
		for pause(time.Until(lock.Until()) - ttl/3) {
			if err := lock.Extend(ctx, ttl); err != nil {
				h.mu.Lock()
				h.lastErr = err
				h.mu.Unlock()
				if !pause(ttl / 10) {
					return
				}
			}
		}
	}()
	return h
}

// err returns the last failed extension's error, nil if none failed.
func (h *holder) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}

// end stops the extension loop, cutting an extension in flight short, and waits for it;
// calling it again does nothing.
func (h *holder) end() {
	h.stop()
	<-h.done
}
