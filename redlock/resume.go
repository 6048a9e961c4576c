package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
)

// Resume takes over the lock of key held under token, as Lock.Token returned it: passed to
// another process, or kept across a restart. It succeeds when a quorum of nodes still holds
// key under token, like Extend with a new ttl from now, and returns a Lock of its own that
// extends and unlocks the key (its Fence is 0). It takes over locks of Lock, TryLock and Do; for
// anything else (a Semaphore's or RWMutex's token, a LockAll's, an expired or unknown token) it
// returns an error wrapping ErrNotHeld. The lock is then held by whoever has the token: the
// process that handed it on must stop using it.
//
// Bad input is an error and sends nothing: an empty key or token, a ttl as for Lock.
func (c *Client) Resume(ctx context.Context, key, token string, ttl time.Duration) (*Lock, error) {
	s := c.mutex(key)
	if err := c.check(s, ttl); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errors.New("redlock: empty token")
	}
	if wire.IsMulti(token) {
		return nil, fmt.Errorf("%w: %q is a LockAll token; Resume takes over single-key locks", ErrNotHeld, token)
	}
	if err := c.enter(); err != nil {
		return nil, errors.Join(ErrNotHeld, err)
	}
	defer c.leave()
	start := c.opts.clock.Now()
	until, err := c.renew(ctx, s, token, ttl, start, nil)
	if err != nil {
		return nil, err
	}
	l := &Lock{c: c, spec: s, token: token, acquired: start, life: lifetime{until: until, ttl: ttl}}
	c.track(l)
	return l, nil
}
