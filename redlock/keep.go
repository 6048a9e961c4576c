package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/redlock/redlock/locktrace"
)

// KeepAlive keeps the lock held: it extends it by ttl whenever a third of the ttl is left, and
// again soon after a failed extension, in a goroutine of the Client, until the lock ends (by
// Unlock, by Close, or by its loss: no extension reached a quorum before the validity ended,
// or one found the key gone). Lost then closes and Err says why. It returns at once; it fails
// for a ttl as Lock refuses it, a lock that ended, or a closed Client. Calling it again while
// the lock is kept does nothing.
func (l *Lock) KeepAlive(ttl time.Duration) error {
	if l == nil {
		return errNilLock
	}
	return l.keepAlive(l.c.life.ctx, ttl)
}

// keepAlive is KeepAlive, whose Extend calls carry ctx's values (not its cancellation): Do's
// extensions are reported as part of Do.
func (l *Lock) keepAlive(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	l.mu.Lock()
	if l.life.ended {
		l.mu.Unlock()
		return l.Err()
	}
	kept := l.life.kept
	l.life.kept = true
	l.mu.Unlock()
	if !kept && !l.keptElsewhere() {
		lost := l.Lost()
		ctx := context.WithoutCancel(ctx)
		c.life.bg.Go(func() { l.keep(ctx, ttl, lost) })
	}
	return nil
}

// keep extends l by ttl whenever a third of the ttl is left, until the lock ends or the Client
// closes.
func (l *Lock) keep(ctx context.Context, ttl time.Duration, lost <-chan struct{}) {
	c := l.c
	// pause waits for d on the client's clock and reports whether to go on.
	pause := func(d time.Duration) bool {
		t := c.opts.clock.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-lost:
			return false
		case <-c.life.done:
			return false
		case <-t.C:
			return true
		}
	}
	for pause(l.Until().Sub(c.opts.clock.Now()) - ttl/3) {
		if err := l.Extend(ctx, ttl); err != nil {
			c.opts.log.DebugContext(ctx, "redlock: extension failed; retrying while the lock is valid", "key", l.spec.key, "err", err)
			// Try again soon: the lock ends by itself when the validity runs out first.
			if !pause(min(c.retryDelay(), ttl/10)) {
				return
			}
		}
	}
}

// do acquires what s says like Lock, runs fn while keeping the lock, and releases the lock when
// fn returns or panics (see Client.Do).
func (c *Client) do(ctx context.Context, s *spec, ttl time.Duration, fn func(ctx context.Context) error) error {
	ctx, call := c.begin(ctx, locktrace.OpDo, s)
	err := errors.New("redlock: nil fn")
	if fn != nil {
		var l *Lock
		if l, err = c.lock(ctx, s, ttl); err == nil {
			err = l.hold(ctx, ttl, fn)
		}
	}
	c.end(ctx, call, err)
	return err
}

// hold runs fn while keeping l, with a context that is cancelled once l can no longer be
// proved held (its cause says why), and releases l when fn returns or panics (the panic then
// goes on to the caller). It returns fn's error, joined with why l was lost, if it was.
func (l *Lock) hold(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) (err error) {
	c := l.c
	fnCtx, cancel := context.WithCancelCause(l.Context(ctx))
	l.whenEnded(func(why error) {
		if why != nil {
			cancel(why)
		}
	})
	defer func() {
		cancel(nil)
		why := l.Err()
		if uerr := l.Unlock(ctx); uerr != nil && why == nil {
			c.opts.log.WarnContext(ctx, "redlock: release after fn", "kind", l.spec.kind, "key", l.spec.key, "err", uerr)
		}
		if why != nil {
			err = errors.Join(why, err)
		}
	}()
	if err := l.keepAlive(ctx, ttl); err != nil {
		return err
	}
	return fn(heldContext{fnCtx, l})
}

// A heldContext is the context of a function that runs while a lock is held. Asking it whether
// it is done reads the clock (Lock.Lost), so that a process paused past the validity finds it
// done as soon as it continues, before the timer that ends the lock has run.
type heldContext struct {
	context.Context
	l *Lock
}

func (h heldContext) Done() <-chan struct{} {
	h.l.Lost()
	return h.Context.Done()
}

func (h heldContext) Err() error {
	h.l.Lost()
	return h.Context.Err()
}
