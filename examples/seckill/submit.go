package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// Submissions take orders from a form that carries a one-time token, at most once per token,
// however often the form is sent (a double click, a retry after a timeout). Flash-sale code
// usually stores the token on one Redis node and checks and deletes it there in one Lua script,
// which a failover to a replica that missed the delete undoes. Here the first submission takes
// "submit:"+token on the quorum for the token's lifetime and orphans it: the mark stays on the
// nodes until it expires, and later submissions find it. The orders are recorded elsewhere, in
// Orders: a store on none of the lock's nodes, so that losing a node, which the lock
// tolerates, loses no order.
type Submissions struct {
	Client *redlock.Client
	Orders OrderBook     // where accepted orders are recorded
	Life   time.Duration // a token's lifetime: how long its duplicates are refused
}

// ErrDuplicate is Submit's answer to a token submitted before.
var ErrDuplicate = errors.New("duplicate submission")

// Submit records the order of the form whose token is token, unless the token was submitted
// before. A refused submission is a duplicate when a quorum holds the mark under one token on
// two looks, confirm apart: a refused attempt's own keys, or a split vote's, hold the key only
// until their roll-backs land. Refused otherwise, nobody holds the mark: it tries again after
// a random pause that doubles with every try.
func (s *Submissions) Submit(ctx context.Context, token string) error {
	if token == "" {
		return errors.New("no token")
	}
	key, held := "submit:"+token, ""
	for try := 0; ; try++ {
		mark, err := s.Client.TryLock(ctx, key, s.Life)
		if err == nil {
			return s.record(ctx, token, mark)
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
			return err
		}
		seen, err := s.Client.Inspect(ctx, key)
		pause := time.Duration(rand.Int64N(int64(time.Millisecond) << min(try, 6)))
		switch {
		case err == nil && seen.Held && seen.Token == held:
			return ErrDuplicate
		case err == nil && seen.Held:
			held, pause = seen.Token, confirm
		default:
			held = ""
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// record records the order of the form whose token won mark. The mark is orphaned first:
// never released, it expires with the token's lifetime, and a shutdown (Close) cannot delete
// it under an order already recorded; when Orphan says the mark is gone, nothing is recorded.
// When the recording fails, the mark is released (taken over by its token and unlocked), so
// that a retry of the form is not refused as the duplicate of an order that does not exist.
func (s *Submissions) record(ctx context.Context, token string, mark *redlock.Lock) error {
	if err := mark.Orphan(ctx); err != nil {
		return err
	}
	err := s.Orders.Record(ctx, token)
	if err == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if l, rerr := s.Client.Resume(ctx, mark.Key(), mark.Token(), time.Second); rerr == nil {
		rerr = l.Unlock(ctx)
		err = errors.Join(err, rerr)
	} else {
		err = errors.Join(err, fmt.Errorf("the mark stays until it expires: %w", rerr))
	}
	return err
}

// confirm is how long Submit waits before it looks at a held mark again: twice the Client's
// node timeout (the default, 100 ms), past any roll-back of a refused attempt.
const confirm = 200 * time.Millisecond

// ServeHTTP takes a form: POST /submit?token=TOKEN answers 200 when the order is recorded, 409
// for a duplicate, 400 without a token, 503 when the order failed (no quorum, Redis down).
func (s *Submissions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	token := r.URL.Query().Get("token")
	switch err := s.Submit(r.Context(), token); {
	case err == nil:
		fmt.Fprintln(w, "ok")
	case errors.Is(err, ErrDuplicate):
		http.Error(w, err.Error(), http.StatusConflict)
	case token == "":
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}

// Submitted returns the tokens of the orders recorded, in order.
func (s *Submissions) Submitted(ctx context.Context) ([]string, error) {
	return s.Orders.Recorded(ctx)
}
