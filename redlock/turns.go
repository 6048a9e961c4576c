package redlock

import (
	"context"
	"sync"
	"time"
)

// turns queues a Client's waiters for one key behind each other, so that they do not contend
// with one another on the nodes: only the waiter whose turn it is makes attempts.
type turns struct {
	mu     sync.Mutex
	keys   map[string]*turn
	recent map[string]time.Time // keys waited for lately, until when they count as contended
}

type turn struct {
	token chan struct{} // holds one value while nobody's turn is running
	refs  int           // waiters holding or waiting for the turn
}

// busy reports whether some of the Client's waiters are queued for key: a new Lock call then
// queues behind them instead of contending with the one whose turn it is.
func (q *turns) busy(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.keys[key] != nil
}

// maxRecent bounds the keys remembered as contended; past it, the memory starts afresh.
const maxRecent = 1024

// mark remembers key as contended until until.
func (q *turns) mark(key string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.recent == nil || len(q.recent) >= maxRecent {
		q.recent = make(map[string]time.Time)
	}
	q.recent[key] = until
}

// contended reports whether key was waited for lately, as of now.
func (q *turns) contended(key string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	until, ok := q.recent[key]
	if ok && !now.Before(until) {
		delete(q.recent, key)
		return false
	}
	return ok
}

// take waits for key's turn; give must follow when it returns nil.
func (q *turns) take(ctx context.Context, key string, done <-chan struct{}) error {
	q.mu.Lock()
	if q.keys == nil {
		q.keys = make(map[string]*turn)
	}
	t := q.keys[key]
	if t == nil {
		t = &turn{token: make(chan struct{}, 1)}
		t.token <- struct{}{}
		q.keys[key] = t
	}
	t.refs++
	q.mu.Unlock()

	select {
	case <-t.token:
		return nil
	case <-ctx.Done():
		q.drop(key, t)
		return ctx.Err()
	case <-done:
		q.drop(key, t)
		return ErrClosed
	}
}

// give ends the turn taken for key.
func (q *turns) give(key string) {
	q.mu.Lock()
	t := q.keys[key]
	q.mu.Unlock()
	t.token <- struct{}{}
	q.drop(key, t)
}

func (q *turns) drop(key string, t *turn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(q.keys, key)
	}
}
