package redlock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// A Lock is one acquisition of a key. Its methods are safe for concurrent use.
type Lock struct {
	c      *Client
	key    string // as the caller gave it
	stored string // with the client's prefix
	token  string

	mu    sync.Mutex
	until time.Time
}

// Key returns the key as given to Lock or TryLock, without the client's prefix.
func (l *Lock) Key() string { return l.key }

// Token returns the value stored under the key on the nodes: 128 random bits, base64url,
// new for every acquisition.
func (l *Lock) Token() string { return l.token }

// Until returns the end of the lock's drift-corrected validity on the local clock: the last
// Lock or successful Extend's start + ttl - drift. Past it, the holder must assume the lock lost.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Extend gives the lock a new ttl from now, on every node where it still holds this lock's
// token. It succeeds only when a quorum did so within the new validity; otherwise it returns an
// error wrapping ErrNotHeld and a *NodeError for each node that failed, and Until is unchanged.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()

	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	start := c.clock.Now()
	until := clock.Deadline(start, ttl, c.driftFactor)
	wait := min(c.nodeTimeout, until.Sub(start))
	callCtx, cancel := context.WithTimeout(ctx, wait)
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), func(ctx context.Context, i int) (struct{}, error) {
		n, err := extendScript.Run(ctx, c.nodes[i], []string{l.stored}, l.token, ms).Int()
		if err == nil && n == 0 {
			err = errNotOwner
		}
		return struct{}{}, err
	})
	out := decide(c, ctx, r, wait)
	drain(c, r, out, cancel, nil)
	now := c.clock.Now()
	if out.Quorum && now.Before(until) {
		l.mu.Lock()
		l.until = until
		l.mu.Unlock()
		return nil
	}
	errs := []error{ErrNotHeld}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(append(errs, nodeErrors(c, ctx, out, wait)...)...)
}

// Unlock releases the lock on every node where it still holds this lock's token (compare and
// delete, atomic on each node); it never deletes another owner's key. It returns nil when a
// quorum released it, else an error wrapping ErrNotHeld and a *NodeError for each node that
// failed: the lock had expired, was taken over, or was already released.
//
// Unlock goes on when ctx is already cancelled, since a release matters most then; it is bounded
// by the node timeout instead. Nodes that answer after the decision are still released.
func (l *Lock) Unlock(ctx context.Context) error {
	c := l.c
	if err := c.enter(); err != nil {
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()

	ctx = context.WithoutCancel(ctx)
	callCtx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
	r := quorum.Start(callCtx, &c.bg, len(c.nodes), func(ctx context.Context, i int) (struct{}, error) {
		return struct{}{}, c.release(ctx, i, l.stored, l.token)
	})
	out := decide(c, ctx, r, c.nodeTimeout)
	drain(c, r, out, cancel, nil)
	if out.Quorum {
		return nil
	}
	return errors.Join(append([]error{ErrNotHeld}, nodeErrors(c, ctx, out, c.nodeTimeout)...)...)
}
