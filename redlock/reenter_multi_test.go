package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A holder that asks, through its context, for keys its lock holds re-enters it, whether the
// lock is a Lock or a LockAll and whatever the call; a call for keys of which it holds only
// some fails at once, saying why, instead of waiting for itself until its context ends (under
// Do without a deadline, forever). On real servers.
func TestReenterAcrossLockAndLockAll(t *testing.T) {
	ctx := context.Background()
	c, err := redlock.New(redistest.Clients(t, redistest.Addrs(redistest.StartN(t, 3))...), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const ttl = time.Minute
	lock := func(ctx context.Context, key string) (*redlock.Lock, error) { return c.Lock(ctx, key, ttl) }
	all := func(keys ...string) func(ctx context.Context, _ string) (*redlock.Lock, error) {
		return func(ctx context.Context, _ string) (*redlock.Lock, error) { return c.LockAll(ctx, keys, ttl) }
	}
	do := func(ctx context.Context, key string) (*redlock.Lock, error) {
		var in *redlock.Lock
		err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
			var err error
			in, err = c.TryLock(ctx, key, ttl) // re-enters Do's own lock: the handle's token is Do's
			return err
		})
		return in, err
	}
	type acquire func(ctx context.Context, key string) (*redlock.Lock, error)
	for _, tc := range []struct {
		name      string
		held, ask acquire
		reenters  bool
	}{
		{"Lock inside LockAll", all("a", "b"), lock, true},
		{"Do inside LockAll", all("a", "b"), do, true},
		{"LockAll of one key inside LockAll", all("a", "b"), all("b"), true},
		{"LockAll of one key inside Lock", lock, all("a"), true},
		{"LockAll inside Lock of one of its keys", lock, all("a", "b"), false},
		{"LockAll inside LockAll of some of its keys", all("a", "b"), all("a", "c"), false},
		{"LockAll of more keys inside LockAll", all("a", "b"), all("a", "b", "c"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outer, err := tc.held(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			defer outer.Unlock(ctx)
			// No deadline, as under Do: a call that waits for itself returns only when the test
			// gives up on it.
			held, giveUp := context.WithCancel(outer.Context(context.Background()))
			defer giveUp()
			got := make(chan error, 1)
			var in *redlock.Lock
			go func() {
				var err error
				in, err = tc.ask(held, "a")
				got <- err
			}()
			err = redistest.Receive(t, "the call inside the holder's context to return", got)
			switch {
			case tc.reenters && err != nil:
				t.Fatalf("did not re-enter: %v", err)
			case tc.reenters && in.Token() != outer.Token():
				t.Fatalf("re-entered with token %q, the holder's is %q", in.Token(), outer.Token())
			case !tc.reenters && !errors.Is(err, redlock.ErrNotAcquired):
				t.Fatalf("%v, want an error wrapping ErrNotAcquired at once", err)
			case !tc.reenters && !strings.Contains(err.Error(), "would wait for itself"):
				t.Fatalf("the error does not say why: %v", err)
			}
			if in != nil && tc.reenters {
				in.Unlock(ctx)
			}
			if err := outer.Err(); err != nil {
				t.Fatalf("the holder's lock after the call: %v", err)
			}
		})
	}
}
