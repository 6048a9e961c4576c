package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// A Locker runs fn while it holds the lock on key. fn's context ends when the lock can no
// longer be proved held; a Locker that cannot tell (the naive one) never ends it.
type Locker interface {
	WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// A Shop sells one item from a stock, as a flash sale's order endpoint does: take the lock,
// read the stock, do the order's work (payment, shipping, ...), write stock-1, record the
// order. Without a working lock two buyers read the same stock and one sale is lost: oversold.
// With a fencing token, the read and the write present it to the stock, which refuses a
// holder that was paused past its lock while another took it.
type Shop struct {
	Store  Store // where the stock and the orders live
	Locker Locker
	Item   string
	Work   time.Duration // the time an order spends between reading and writing the stock
	// Submissions, when set, take forms at POST /submit (see submit.go).
	Submissions *Submissions
}

func (s *Shop) lockKey() string { return "lock:" + s.Item }

// Restock sets the stock to n and forgets all orders.
func (s *Shop) Restock(ctx context.Context, n int) error { return s.Store.Restock(ctx, s.Item, n) }

// ErrSoldOut is Order's answer when the stock is 0.
var ErrSoldOut = errors.New("sold out")

// Order sells one item to buyer under the lock.
func (s *Shop) Order(ctx context.Context, buyer string) error {
	// Once sold out, stay sold out without queueing for the lock: the stock never grows
	// during a sale, so this read needs no lock. The read that counts is the one under it.
	if stock, err := s.Store.Left(ctx, s.Item, 0); err == nil && stock <= 0 {
		return ErrSoldOut
	}
	return s.Locker.WithLock(ctx, s.lockKey(), func(ctx context.Context) error {
		fence := fenceOf(ctx)
		stock, err := s.Store.Left(ctx, s.Item, fence)
		if err != nil {
			return err
		}
		if stock <= 0 {
			return ErrSoldOut
		}
		select { // the order's work
		case <-time.After(s.Work):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx) // the lock is lost: write nothing
		}
		return s.Store.Sell(ctx, s.Item, fence, stock-1, buyer)
	})
}

// ServeHTTP takes orders: POST /order?buyer=NAME answers 200, 409 when sold out, 503 when the
// order failed (no lock, lost lock, Redis down).
func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/submit" && s.Submissions != nil {
		s.Submissions.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/order" {
		http.NotFound(w, r)
		return
	}
	switch err := s.Order(r.Context(), r.URL.Query().Get("buyer")); {
	case err == nil:
		fmt.Fprintln(w, "ok")
	case errors.Is(err, ErrSoldOut):
		http.Error(w, "sold out", http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}

// A Report is the state of the shop after a sale.
type Report struct {
	Initial   int // stock at the start
	StockLeft int
	Orders    int // orders recorded
	Oversold  int // orders recorded beyond the items taken from the stock
}

// Count reads the stock and the orders.
func (s *Shop) Count(ctx context.Context, initial int) (Report, error) {
	return s.Store.Count(ctx, s.Item, initial)
}

// Redlock is this library's lock: Redlock over independent masters, kept extended while the
// order runs (Lock.KeepAlive), and the order's context ends the moment the lock cannot be
// proved held, so that a late order writes nothing (and an order whose lock is lost is an
// error, as with Client.Do). The context carries the lock's fencing token when the Client
// makes them (redlock.WithFencing), for the stock to refuse a holder paused past its lock.
type Redlock struct {
	Client *redlock.Client
	TTL    time.Duration
}

func (r Redlock) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	l, err := r.Client.Lock(ctx, key, r.TTL)
	if err != nil {
		return err
	}
	defer l.Unlock(context.WithoutCancel(ctx))
	if err := l.KeepAlive(r.TTL); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(withFence(ctx, l.Fence()))
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-l.Lost():
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(nil); <-watched }()
	err = fn(ctx)
	if why := l.Err(); why != nil {
		return errors.Join(why, err)
	}
	return err
}

// Naive is the lock flash-sale tutorials show, on one Redis node: SETNX, then EXPIRE in a
// second command; poll until it succeeds; release by GET, compare, DEL in three steps. Nothing
// extends it and nothing tells the holder it expired.
type Naive struct {
	Store redis.UniversalClient
	TTL   time.Duration
	Poll  time.Duration
}

func (n Naive) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	var b [8]byte
	rand.Read(b[:])
	me := hex.EncodeToString(b[:])
	for {
		ok, err := n.Store.SetNX(ctx, key, me, 0).Result()
		if err != nil {
			return err
		}
		if ok {
			n.Store.PExpire(ctx, key, n.TTL)
			break
		}
		select {
		case <-time.After(n.Poll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if v, _ := n.Store.Get(ctx, key).Result(); v == me {
			n.Store.Del(ctx, key) // by now the key may be someone else's
		}
	}()
	return fn(ctx)
}

// buyerName numbers the load generator's buyers.
func buyerName(i int) string { return "buyer-" + strconv.Itoa(i) }
