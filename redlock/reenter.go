package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/redlock/locktrace"
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
// What re-enters what: a Lock or a LockAll re-enters a held Lock or LockAll that holds every
// key it asks for (one from Resume too), since both store a key alike: a Lock of "a" or a
// LockAll of {"b"} inside a LockAll of {"a", "b"}, a LockAll of {"a"} inside a Lock of "a". An
// RWMutex's lock for reading or writing re-enters its lock for writing, and a lock for reading
// its lock for reading. A call that would wait for itself fails at once with an error wrapping
// ErrNotAcquired that says so: a LockAll that asks for keys of which the held lock holds some
// but not all, and a lock for writing asked for with the context of a held lock for reading.
// Nothing else re-enters: a Semaphore's permits never do, and a call whose context does not
// carry the lock, carries another Client's or other keys', or carries a lock that has ended,
// contends like any other. To hand a lock to another process, pass its Token to Client.Resume.
//
// A re-entered handle's Until, Fence and Token are the lock's; its Extend and KeepAlive extend
// the lock (KeepAlive until the handle ends, and not at all when the lock is kept already). Its
// Lost closes when the lock ends, and at its own Unlock or Orphan, as every Lock's does; its Err
// is the lock's. The keys are released when the lock's own Unlock runs (or its Do returns),
// whatever handles are still open: their Lost channels then close, their Err and their Unlock
// return an error wrapping ErrNotHeld, and an inner Do's fn sees its context cancelled.
func (l *Lock) Context(ctx context.Context) context.Context {
	if l == nil {
		return ctx
	}
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
// Client that it holds and that holds what s asks for; an error when ctx carries one that
// holds some of it but not all, so that the call would wait for itself; nil and nil when it
// carries none that meets s, and the call contends as usual.
func (c *Client) reenter(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	first, _ := ctx.Value(heldKey{}).(*held)
	var blocked *Lock
	for h := first; h != nil; h = h.next {
		l := h.l
		if l.c != c || l.endedAt(c.opts.clock.Now()) {
			continue
		}
		switch meet(l.spec, s) {
		case inside:
			return l.enter(ctx, s, ttl)
		case waitsForItself:
			blocked = l
		}
	}
	if blocked != nil {
		return nil, fmt.Errorf("%w: the context holds %s: %s taken inside it would wait for itself",
			ErrNotAcquired, describe(blocked.spec), describe(s))
	}
	return nil, nil
}

// How a call meets a lock that its context holds.
type meeting int

const (
	apart          meeting = iota // nothing in common: the call contends as usual
	inside                        // the held lock holds what the call asks for: it re-enters
	waitsForItself                // the held lock holds part of it, or holds it for reading only
)

// meet says how a call for s meets the held lock of spec h. A Lock of a key, or a LockAll, is
// within a held Lock or LockAll that holds each of its keys (they store a key alike); a lock
// for reading or writing of an RWMutex is within its held lock for writing, and a lock for
// reading within its held lock for reading. Semaphores and elections never meet anything.
func meet(h, s *spec) meeting {
	switch {
	case h.kind == locktrace.KindRead && s.kind == locktrace.KindWrite && s.key == h.key:
		return waitsForItself
	case (h.kind == locktrace.KindRead || h.kind == locktrace.KindWrite) && (s.kind == locktrace.KindRead || s.kind == locktrace.KindWrite):
		if s.key == h.key {
			return inside
		}
	case (h.kind == locktrace.KindMutex || h.kind == locktrace.KindMulti) && (s.kind == locktrace.KindMutex || s.kind == locktrace.KindMulti):
		held, asked := h.lockKeys(), s.lockKeys()
		n := 0
		for _, k := range asked {
			if slices.Contains(held, k) {
				n++
			}
		}
		switch n {
		case len(asked):
			return inside
		case 0:
		default:
			return waitsForItself
		}
	}
	return apart
}

// lockKeys returns the keys, as given, of a Lock or LockAll.
func (s *spec) lockKeys() []string {
	if s.keys != nil {
		return s.keys
	}
	return []string{s.key}
}

// describe names what s locks, for an error.
func describe(s *spec) string {
	switch s.kind {
	case locktrace.KindMulti:
		return fmt.Sprintf("LockAll of %q", s.keys)
	case locktrace.KindRead:
		return fmt.Sprintf("%q for reading", s.key)
	case locktrace.KindWrite:
		return fmt.Sprintf("%q for writing", s.key)
	}
	return fmt.Sprintf("%q", s.key)
}

// enter re-enters l for a call for s with ttl, extending l first when a lock acquired now for
// ttl would outlast it. It returns nil and nil when l ended meanwhile: the call then contends.
func (l *Lock) enter(ctx context.Context, s *spec, ttl time.Duration) (*Lock, error) {
	c := l.c
	if clock.Deadline(c.opts.clock.Now(), ttl, c.opts.driftFactor).After(l.Until()) {
		if err := l.extend(ctx, ttl); err != nil {
			return nil, errors.Join(ErrNotAcquired,
				fmt.Errorf("redlock: re-entering %q for %v needs the held lock extended: %w", s.key, ttl, err))
		}
	}
	in := &Lock{c: c, spec: s, token: l.token, fence: l.fence, life: lifetime{until: endless}}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life.ended {
		return nil, nil
	}
	re := l.re.Load()
	if re == nil {
		re = &reentry{outer: l, open: make(map[*Lock]struct{})}
		l.re.Store(re)
		l.life.onEnd = append(l.life.onEnd, re.end)
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
	again := l.life.released
	l.life.released = true
	l.endLocked(nil)
	switch {
	case again:
		return fmt.Errorf("%w: released or orphaned already", ErrNotHeld)
	case l.life.why != nil:
		return l.life.why
	}
	return nil
}

// extendOuter is Extend of the handle l of a re-entry: it extends the lock l re-entered,
// unless l has ended.
func (l *Lock) extendOuter(ctx context.Context, ttl time.Duration) error {
	l.mu.Lock()
	ended, why := l.life.ended, l.life.why
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
	return outer.life.kept
}
