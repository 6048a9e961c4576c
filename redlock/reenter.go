package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/clock"
)

// Re-entry. A holder that asks again for a lock it holds, with a context that carries the lock
// (Lock.Context, or the context Do gives fn), gets a handle of the same lock at once, without
// a round trip, instead of waiting for itself. Ownership travels in the context, explicitly:
// Go has no goroutine identity to tie it to, and a context is what a call chain already passes
// down, to the goroutines it starts too.

// heldKey is the context key of the locks a context carries.
type heldKey struct{}

// held is the chain of locks a context carries, the latest first.
type held struct {
	l    *Lock
	next *held
}

// endless is a handle's own validity: it never ends by the clock, only when its lock ends (or
// by its own Unlock); its Until is its lock's.
var endless = time.Unix(1<<62, 0)

// A reentry is what a lock and the handles of its re-entries share: the lock, and the handles
// still open, which end when it ends. Guarded by the lock's mutex.
type reentry struct {
	outer *Lock
	open  map[*Lock]struct{}
}

// Context returns a context derived from ctx that carries the lock. Client.Lock, TryLock and
// Do, RWMutex.Lock, TryLock, Do, RLock, TryRLock and RDo, and LockAll and TryLockAll of the
// same Client, called for the lock's own keys with this context or one derived from it while
// the lock is held, re-enter it: they return at once a handle whose Unlock only counts down
// (see Lock.Context's example). They send nothing to the nodes when their ttl fits in the
// lock's validity; otherwise they extend the lock first, and fail when that fails.
//
// What re-enters what: a Lock of a key re-enters a Lock of that key (one from Resume too); an
// RWMutex's lock for reading or writing re-enters its lock for writing, and a lock for reading
// its lock for reading; a LockAll re-enters a LockAll of the same set of keys. A lock for
// writing asked for with the context of a held lock for reading fails at once: it would wait
// for itself. Nothing else re-enters: a Semaphore's permits never do, and a call whose context
// does not carry the lock, carries another Client's or another key's, or carries a lock that
// has ended, contends like any other. To hand a lock to another process, pass its Token to
// Client.Resume.
//
// A re-entered handle's Until, Fence and Token are the lock's; its Extend and KeepAlive extend
// the lock (KeepAlive until the handle ends, and not at all when the lock is kept already). Its
// Lost closes when the lock ends, and at its own Unlock or Orphan, as every Lock's does; its Err
// is the lock's. The keys are released when the lock's own Unlock runs (or its Do returns),
// whatever handles are still open: their Lost channels then close, their Err and their Unlock
// return an error wrapping ErrNotHeld, and an inner Do's fn sees its context cancelled.
func (l *Lock) Context(ctx context.Context) context.Context {
	l = l.outermost()
	first, _ := ctx.Value(heldKey{}).(*held)
	for h := first; h != nil; h = h.next {
		if h.l == l {
			return ctx
		}
	}
	return context.WithValue(ctx, heldKey{}, &held{l: l, next: first})
}

// outermost returns the lock that l re-entered, or l when it was acquired.
func (l *Lock) outermost() *Lock {
	if re := l.re.Load(); re != nil {
		return re.outer
	}
	return l
}

// reentered returns the lock that the handle l re-entered, nil when l was acquired.
func (l *Lock) reentered() *Lock {
	if re := l.re.Load(); re != nil && re.outer != l {
		return re.outer
	}
	return nil
}

// reenter returns a handle of the lock that ctx carries for s, when ctx carries one of this
// Client that it holds; nil and nil when it carries none, and the call contends as usual.
func (c *Client) reenter(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	first, _ := ctx.Value(heldKey{}).(*held)
	for h := first; h != nil; h = h.next {
		l := h.l
		if l.c != c || !reentrant(l.spec, s) || l.endedAt(c.clock.Now()) {
			continue
		}
		if l.spec.kind == KindRead && s.kind == KindWrite {
			return nil, fmt.Errorf("redlock: the context holds %q for reading: a lock for writing taken inside it would wait for itself", s.key)
		}
		return l.enter(ctx, s, ttl)
	}
	return nil, nil
}

// reentrant reports whether a call for s meets the held lock of spec h: the same kind of lock
// on the same keys, or either side of an RWMutex on the same key. Semaphores and elections
// never re-enter.
func reentrant(h, s *spec) bool {
	switch h.kind {
	case KindMutex:
		return s.kind == KindMutex && s.key == h.key
	case KindRead, KindWrite:
		return (s.kind == KindRead || s.kind == KindWrite) && s.key == h.key
	case KindMulti:
		if s.kind != KindMulti || len(s.keys) != len(h.keys) {
			return false
		}
		for _, k := range s.keys { // each set's keys are distinct
			if !slices.Contains(h.keys, k) {
				return false
			}
		}
		return true
	}
	return false
}

// enter re-enters l for a call for s with ttl, extending l first when a lock acquired now for
// ttl would outlast it. It returns nil and nil when l ended meanwhile: the call then contends.
func (l *Lock) enter(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	c := l.c
	if clock.Deadline(c.clock.Now(), ttl, c.driftFactor).After(l.Until()) {
		if err := l.extend(ctx, ttl); err != nil {
			return nil, errors.Join(ErrNotAcquired,
				fmt.Errorf("redlock: re-entering %q for %v needs the held lock extended: %w", s.key, ttl, err))
		}
	}
	in := &Lock{c: c, spec: s, token: l.token, fence: l.fence, until: endless}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil, nil
	}
	re := l.re.Load()
	if re == nil {
		re = &reentry{outer: l, open: make(map[*Lock]struct{})}
		l.re.Store(re)
		l.onEnd = append(l.onEnd, re.end)
	}
	in.re.Store(re)
	re.open[in] = struct{}{}
	return in, nil
}

// end ends the handles still open once the lock ends for why (nil: its holder released or
// orphaned it). The lock's mutex is held.
func (re *reentry) end(why error) {
	if why == nil {
		why = fmt.Errorf("%w: the holder that acquired it released it", ErrNotHeld)
	}
	for in := range re.open {
		in.mu.Lock()
		in.endLocked(why)
		in.mu.Unlock()
	}
	clear(re.open)
}

// leave ends the handle l of a re-entry (its Unlock and Orphan): it counts down, and sends
// nothing. It fails when l was unlocked or orphaned already, or when the lock had ended.
func (l *Lock) leave() error {
	re := l.re.Load()
	re.outer.mu.Lock()
	delete(re.open, l)
	re.outer.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	again := l.released
	l.released = true
	l.endLocked(nil)
	switch {
	case again:
		return fmt.Errorf("%w: released or orphaned already", ErrNotHeld)
	case l.why != nil:
		return l.why
	}
	return nil
}

// extendOuter is Extend of the handle l of a re-entry: it extends the lock l re-entered,
// unless l has ended.
func (l *Lock) extendOuter(ctx context.Context, ttl time.Duration) error {
	l.mu.Lock()
	ended, why := l.ended, l.why
	l.mu.Unlock()
	switch {
	case ended && why == nil:
		return fmt.Errorf("%w: it was released", ErrNotHeld)
	case ended:
		return why
	}
	return l.re.Load().outer.extend(ctx, ttl)
}

// keptElsewhere reports whether l is the handle of a re-entry whose lock is kept already
// (KeepAlive, or an outer Do): then l's KeepAlive adds no extensions of its own.
func (l *Lock) keptElsewhere() bool {
	outer := l.reentered()
	if outer == nil {
		return false
	}
	outer.mu.Lock()
	defer outer.mu.Unlock()
	return outer.kept
}
