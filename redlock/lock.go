package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A Lock is one acquisition: of a key by Client.Lock, TryLock, Do or Resume, of a permit of a
// Semaphore, of an RWMutex for reading or writing, or of several keys by LockAll. Its methods
// are safe for concurrent use. A nil *Lock, what a failed acquisition returns, holds nothing and
// never panics: its accessors return zero values, Lost a closed channel, Context its ctx, and
// Err, Unlock, Extend, KeepAlive and Orphan an error wrapping ErrNotHeld.
type Lock struct {
	c        *Client
	spec     *spec
	token    string
	waiter   string // the name of the waiter that acquired it, "" for none
	fence    uint64
	acquired time.Time // when it was acquired (or resumed), for an Observer

	mu     sync.Mutex
	life   lifetime // under mu
	flight inFlight // under mu
	// re is what the lock shares with the handles of its re-entries, nil until the first
	// one; a handle's is its lock's from the start (see Context).
	re atomic.Pointer[reentry]
}

// A lifetime is a lock's validity and how it ended: what Until, Lost and Err read.
type lifetime struct {
	until    time.Time
	ttl      time.Duration // the last acquisition's or Extend's
	ended    bool
	why      error         // why it ended: nil for Unlock
	released bool          // a release was sent (by Unlock or Close), or it was orphaned
	lost     chan struct{} // made by the first Lost call; closed when ended
	timer    *time.Timer   // ends the lock at until, armed by the first Lost call
	onEnd    []func(why error)
	kept     bool // KeepAlive keeps it
}

// inFlight are the nodes whose acquisition call had not returned when the lock was granted,
// until each returns (pending); releasing is the release's round, and sendLate adds to it the
// call to such a node once that node's acquisition call returned.
type inFlight struct {
	pending   []int
	releasing *quorum.Round[struct{}]
	sendLate  func(node int)
}

// errNilLock is the error of a nil *Lock's methods, and gone its Lost channel.
var (
	errNilLock = fmt.Errorf("%w: a nil *Lock, as a failed acquisition returns", ErrNotHeld)
	gone       = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
)

// Key returns the key as given (the first of LockAll's keys), without the client's prefix.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.spec.key
}

// Keys returns every key the lock holds, as given: LockAll's keys, or [Key()].
func (l *Lock) Keys() []string {
	if l == nil {
		return nil
	}
	if l.spec.keys != nil {
		return slices.Clone(l.spec.keys)
	}
	return []string{l.spec.key}
}

// Token returns the value stored under the key on the nodes: 128 random bits, base64url, new
// for every acquisition. Whoever has it can take the lock over (Client.Resume).
func (l *Lock) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Fence returns the lock's fencing token, or 0 unless the Client was made WithFencing and the
// lock was acquired by Client.Lock, TryLock or Do. Fencing tokens of one key strictly increase
// from one acquisition to the next, by any client: a resource that refuses a token lower than
// the highest it has accepted refuses a holder whose lock has expired (see WithFencing for the
// assumptions).
func (l *Lock) Fence() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// Until returns the end of the lock's drift-corrected validity on the local clock: the last
// Lock or successful Extend's start + ttl - drift. Past it, the holder must assume the lock lost.
func (l *Lock) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	if outer := l.reentered(); outer != nil {
		return outer.Until()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.life.until
}

// Lost returns a channel that is closed when the lock can no longer be proved held: its
// validity passed without a successful Extend, an Extend found it gone from so many nodes
// that no quorum holds it, Unlock released it, or Close did. Once closed it stays closed, and
// Err says why.
//
// A timer closes the channel at the end of the validity, and a process that was paused past it
// runs that timer only some time after it continues. So Lost reads the clock too: a call made
// once the validity has passed returns the channel closed. To ask whether the lock is held
// now, call Lost (or Err) again rather than keep a channel from an earlier call.
func (l *Lock) Lost() <-chan struct{} {
	if l == nil {
		return gone
	}
	outer := l.reentered()
	if outer != nil {
		outer.Lost() // its timer ends it, and so l, at the end of its validity
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.life.ended && !l.c.opts.clock.Now().Before(l.life.until) {
		l.endLocked(l.expired())
	}
	if l.life.lost == nil {
		l.life.lost = make(chan struct{})
		switch {
		case l.life.ended:
			close(l.life.lost)
		case outer == nil:
			l.life.timer = l.c.opts.clock.AfterFunc(l.life.until.Sub(l.c.opts.clock.Now()), l.expire)
		}
	}
	return l.life.lost
}

// Err returns nil while the lock is held and after Unlock released it; once it was lost, an
// error wrapping ErrNotHeld that says how (with the nodes' errors of the last failed Extend);
// once Close released it, an error wrapping ErrClosed.
func (l *Lock) Err() error {
	if l == nil {
		return errNilLock
	}
	outer := l.reentered()
	if outer != nil {
		outer.Err() // ends it, and so l, once its validity passed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.life.ended && !l.c.opts.clock.Now().Before(l.life.until) {
		l.endLocked(l.expired())
	}
	return l.life.why
}

// expire runs at the end of the validity; an Extend may have moved it since the timer was set.
func (l *Lock) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life.ended {
		return
	}
	if left := l.life.until.Sub(l.c.opts.clock.Now()); left > 0 {
		l.life.timer.Reset(left)
		return
	}
	l.endLocked(l.expired())
}

// expired is why a lock whose validity passed ended. l.mu is held.
func (l *Lock) expired() error {
	return fmt.Errorf("%w: its validity ended at %v", ErrNotHeld, l.life.until.Format(time.RFC3339Nano))
}

// endLocked ends the lock for why (nil: released by Unlock): Lost closes, and whatever waits
// on its end is told. l.mu is held.
func (l *Lock) endLocked(why error) {
	if l.life.ended {
		return
	}
	l.life.ended, l.life.why = true, why
	if l.reentered() == nil { // a re-entry's handle was neither tracked nor acquired
		l.c.untrack(l)
		l.reportEnd()
	}
	if l.life.timer != nil {
		l.life.timer.Stop()
	}
	if l.life.lost != nil {
		close(l.life.lost)
	}
	for _, f := range l.life.onEnd {
		f(why)
	}
}

// whenEnded calls f with why once the lock ends, at once if it has.
func (l *Lock) whenEnded(f func(why error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life.ended {
		f(l.life.why)
		return
	}
	l.life.onEnd = append(l.life.onEnd, f)
}

// endedAt reports whether the lock had ended by now, ending it if its validity has passed.
func (l *Lock) endedAt(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.life.ended && !now.Before(l.life.until) {
		l.endLocked(l.expired())
	}
	return l.life.ended
}

// Unlock releases the lock on every node where it still holds this lock's token (compare and
// delete, atomic on each node); it never deletes another owner's key. It returns nil when a
// quorum released it; else an error wrapping ErrNotHeld when so many nodes said the key was not
// this lock's that no quorum held it (it had expired, was taken over, or was released already),
// or ErrNoQuorum when too few nodes answered to tell (the lock may still hold on those until
// its validity ends), with a *NodeError for each node that failed. After Close released the
// lock, it returns an error wrapping ErrClosed. Lost closes either way.
//
// Unlock goes on when ctx is already cancelled, since a release matters most then; it is bounded
// by the node timeout instead. Nodes that answer after the decision are still released. The
// release wakes the next waiter.
func (l *Lock) Unlock(ctx context.Context) error {
	if l == nil {
		return errNilLock
	}
	c := l.c
	ctx, call := c.begin(ctx, locktrace.OpUnlock, l.spec)
	var err error
	if l.reentered() != nil {
		err = l.leave() // a re-entry's handle counts down
	} else {
		err = l.release(ctx, nil)
	}
	c.end(ctx, call, err)
	return err
}

// release ends the lock for why (nil for Unlock) and sends its release to every node.
func (l *Lock) release(ctx context.Context, why error) error {
	if err := l.endForRelease(why); err != nil {
		return err
	}
	if why == nil { // Close's releases run after it closed the Client
		if err := l.c.enter(); err != nil {
			return err
		}
		defer l.c.leave()
	}
	if ctx.Done() != nil { // a release matters most when ctx ended (one that never ends stays)
		ctx = context.WithoutCancel(ctx)
	}
	return l.sendRelease(ctx)
}

// endForRelease ends the lock for why, unless a release was sent already (by Unlock, Orphan or
// Close): then it says so.
func (l *Lock) endForRelease(why error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	again, closed := l.life.released, errors.Is(l.life.why, ErrClosed)
	l.life.released = true
	l.endLocked(why)
	switch {
	case closed:
		return fmt.Errorf("%w: Close released the lock", ErrClosed)
	case again:
		return fmt.Errorf("%w: released or orphaned already", ErrNotHeld)
	}
	return nil
}

// sendRelease sends the lock's release to every node and decides at the lock's quorum. A node
// whose acquisition call has not returned yet is released once it has (late), so that the
// release does not overtake the acquisition there.
func (l *Lock) sendRelease(ctx context.Context) error {
	c := l.c
	start := c.began()
	rd := round[struct{}]{c: c, op: locktrace.NodeRelease, cmd: l.spec.ops.release(l.token, c.self.channel, l.waiter),
		decode: decodeHeld, wait: c.opts.nodeTimeout, need: l.spec.need, hold: l.life.ttl}
	callCtx, cancel := context.WithTimeout(ctx, max(rd.wait, rd.hold))
	q := quorum.New[struct{}](len(c.nodes))
	var onStack [8]int // the pending nodes' copy, without an allocation for most Clients
	pending := l.sendAll(ctx, callCtx, rd, q, onStack[:0])
	out := &asked[struct{}]{Outcome: rd.decide(callCtx, q), c: c, q: q, cancel: cancel}
	out.rest(nil)
	var err error
	if !out.Quorum {
		err = c.verdict(ctx, l.spec, out.Outcome, pending, rd.wait)
	}
	c.decided(ctx, votes(out.Outcome), c.since(start), err)
	return err
}

// sendAll sends rd's call, in q, to every node whose acquisition call has returned, and leaves
// the others to l.late; it returns those others, appended to pending (a copy: l.flight.pending changes
// as they answer).
func (l *Lock) sendAll(ctx, callCtx context.Context, rd round[struct{}], q *quorum.Round[struct{}], pending []int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	call := rd.call // a method value costs an allocation each time it is taken
	l.flight.releasing = q
	pending = append(pending, l.flight.pending...)
	if len(pending) > 0 {
		l.flight.sendLate = rd.late(ctx, callCtx, q, call)
	}
	for i := range l.c.nodes {
		if !slices.Contains(pending, i) {
			q.Go(callCtx, l.c.life.calls, i, call)
		}
	}
	return pending
}

// late returns what sends, in q, the release of a node whose acquisition call answered after
// the release round began (call is rd.call): within callCtx, the round's, while that leaves
// the round's wait; else with the round's time from then.
func (rd round[T]) late(ctx, callCtx context.Context, q *quorum.Round[T], call func(context.Context, int) (T, error)) func(node int) {
	return func(i int) {
		if d, ok := callCtx.Deadline(); ok && time.Until(d) >= rd.wait {
			q.Go(callCtx, rd.c.life.calls, i, call)
			return
		}
		lateCtx, cancel := context.WithTimeout(ctx, max(rd.wait, rd.hold))
		q.Go(lateCtx, rd.c.life.calls, i, func(ctx context.Context, i int) (T, error) {
			defer cancel()
			return call(ctx, i)
		})
	}
}

// late takes the reply of an acquisition call that returned after the lock was granted. If
// the lock is being released, the node's release is sent now, after the acquisition, unless
// the node clearly refused it (and holds no place in line for its waiter either).
func (l *Lock) late(rep quorum.Reply[wire.Grant]) {
	l.mu.Lock()
	l.flight.pending = slices.DeleteFunc(l.flight.pending, func(i int) bool { return i == rep.Node })
	q, send := l.flight.releasing, l.flight.sendLate
	l.mu.Unlock()
	switch {
	case q == nil: // Unlock will send it
	case errors.Is(rep.Err, errTaken) && l.waiter == "":
		q.Put(quorum.Reply[struct{}]{Node: rep.Node, Err: errNotOwner})
	default:
		send(rep.Node)
	}
}
