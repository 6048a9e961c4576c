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
	won   bool          // the last turn acquired the key
}

// state reports, as of now, whether some of the Client's waiters are queued for key (busy: a
// new Lock call then queues behind them instead of contending with the one whose turn it is),
// and whether the Client waited for key lately (contended, see mark).
func (q *turns) state(key string, now time.Time) (busy, contended bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	until, ok := q.recent[key]
	if ok && !now.Before(until) {
		delete(q.recent, key)
		ok = false
	}
	return q.keys[key] != nil, ok
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

// take waits for key's turn and reports whether the last turn acquired the key; give must
// follow when it returns no error.
func (q *turns) take(ctx context.Context, key string, done <-chan struct{}) (bool, error) {
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
		q.mu.Lock()
		defer q.mu.Unlock()
		return t.won, nil
	case <-ctx.Done():
		q.drop(key, t)
		return false, ctx.Err()
	case <-done:
		q.drop(key, t)
		return false, ErrClosed
	}
}

// give ends the turn taken for key, which acquired it or not (won).
func (q *turns) give(key string, won bool) {
	q.mu.Lock()
	t := q.keys[key]
	t.won = won
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
