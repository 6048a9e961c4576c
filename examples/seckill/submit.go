package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// Submissions take orders from a form that carries a one-time token, at most once per token,
// however often the form is sent (a double click, a retry after a timeout). Flash-sale code
// usually stores the token on one Redis node and checks and deletes it there in one Lua script,
// which a failover to a replica that missed the delete undoes. Here the first submission takes
// "submit:"+token on the quorum for the token's lifetime and orphans it: the mark stays on the
// nodes until it expires, and later submissions find it.
type Submissions struct {
	Client *redlock.Client
	Orders redis.UniversalClient // where accepted orders are recorded
	Life   time.Duration         // a token's lifetime: how long its duplicates are refused
}

// submittedKey lists the tokens of the orders accepted.
const submittedKey = "orders:submitted"

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
			mark.Orphan() // never released: it expires with the token's lifetime
			return s.Orders.RPush(ctx, submittedKey, token).Err()
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
	return s.Orders.LRange(ctx, submittedKey, 0, -1).Result()
}
