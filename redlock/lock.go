package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// A Lock is one acquisition: of a key by Client.Lock, TryLock, Do or Resume, of a permit of a
// Semaphore, of an RWMutex for reading or writing, or of several keys by LockAll. Its methods
// are safe for concurrent use.
type Lock struct {
	c *Client
	spec
	token    string
	fence    uint64
	acquired time.Time // for an Observer: when it was acquired (or resumed)
	// The release script's arguments for Unlock and late, made once, only read: announce the
	// release, and take the waiter that acquired the lock, if any, out of the key's queue.
	// attempt makes relCmd from them at once; other Locks set relArgs.
	relArgs []any

	mu     sync.Mutex
	relCmd []any // the release's EVALSHA (see evalsha); else made by the first releaserLocked
	until  time.Time
	ended  bool          // lost, or released by Unlock: final
	lost   chan struct{} // made by the first Lost call; closed when ended
	timer  *time.Timer   // ends the lock at until, armed by the first Lost call
	onLost func()        // Do's cancellation of fn

	// pending are the nodes whose acquisition reply had not come when the lock was granted,
	// until it comes; unlocking is the first Unlock's round, which waits for their releases.
	pending   []int
	waited    bool // acquired by a waiter, whose refusals leave it queued (or marked) on a node
	unlocking *quorum.Round[struct{}]
}

// Key returns the key as given (the first of LockAll's keys), without the client's prefix.
func (l *Lock) Key() string { return l.key }

// Keys returns every key the lock holds, as given: LockAll's keys, or [Key()].
func (l *Lock) Keys() []string {
	if l.keys != nil {
		return slices.Clone(l.keys)
	}
	return []string{l.key}
}

// Token returns the value stored under the key on the nodes, new for every acquisition: 128
// random bits, base64url, or for a lock that was handed over by releases (see Client.Lock)
// the waiter's name, the Client's random id followed by a counter and the ttl.
func (l *Lock) Token() string { return l.token }

// Fence returns the lock's fencing token, or 0 unless the Client was made WithFencing and the
// lock was acquired by Client.Lock, TryLock or Do. Fencing tokens of one key strictly increase
// from one acquisition to the next, by any client: a resource that refuses a token lower than
// the highest it has accepted refuses a holder whose lock has expired (see WithFencing for the
// assumptions).
func (l *Lock) Fence() uint64 { return l.fence }

// Until returns the end of the lock's drift-corrected validity on the local clock: the last
// Lock or successful Extend's start + ttl - drift. Past it, the holder must assume the lock lost.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Lost returns a channel that is closed when the lock can no longer be proved held: its
// validity passed without a successful Extend, an Extend found it gone from a majority, or
// Unlock released it. Once closed it stays closed, and Extend fails.
func (l *Lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = make(chan struct{})
		if l.ended {
			close(l.lost)
		} else {
			l.timer = l.c.clock.AfterFunc(l.until.Sub(l.c.clock.Now()), l.expire)
		}
	}
	return l.lost
}

// expire runs at the end of the validity; an Extend may have moved it since the timer was set.
func (l *Lock) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	if left := l.until.Sub(l.c.clock.Now()); left > 0 {
		l.timer.Reset(left)
		return
	}
	l.endLocked(false)
}

// endLocked marks the lock ended, closing Lost and cancelling Do's fn: unlocked by Unlock,
// else lost. l.mu is held.
func (l *Lock) endLocked(unlocked bool) {
	if l.ended {
		return
	}
	l.ended = true
	l.reportEnd(unlocked)
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.lost != nil {
		close(l.lost)
	}
	if l.onLost != nil {
		l.onLost()
	}
}

func (l *Lock) end() {
	l.mu.Lock()
	l.endLocked(true)
	l.mu.Unlock()
}

func (l *Lock) hasEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// endedAt reports whether the lock had ended by now.
func (l *Lock) endedAt(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended && !now.Before(l.until) {
		l.endLocked(false)
	}
	return l.ended
}

// Extend gives the lock a new ttl from now, on every node where it still holds this lock's
// token. It succeeds only when a quorum did so within the new validity, before the lock ended;
// otherwise it returns an error wrapping ErrNotHeld and a *NodeError for each node that failed,
// and Until is unchanged. A lock whose validity has passed, or that was released, is not
// extended: acquire it again.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	ctx, call := l.c.begin(ctx, OpExtend, &l.spec)
	err := l.renewFor(ctx, ttl)
	l.c.end(ctx, call, err)
	return err
}

// renewFor is Extend.
func (l *Lock) renewFor(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()

	start := c.clock.Now()
	if l.endedAt(start) {
		return fmt.Errorf("%w: it ended at %v", ErrNotHeld, l.Until().Format(time.RFC3339Nano))
	}
	r := c.renew(ctx, start, l.extend, l.extKeys, l.need, l.token, ttl)
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.err == nil && !l.ended {
		l.until = r.until
		return nil
	}
	if r.gone {
		l.endLocked(false) // lost now, not at Until
	}
	if r.err == nil {
		return fmt.Errorf("%w: it ended while being extended", ErrNotHeld)
	}
	return r.err
}

// A renewal is the outcome of one round of an extend script, Extend's or Resume's.
type renewal struct {
	until time.Time // the new validity's end
	gone  bool      // so many nodes no longer hold the token that no quorum can
	err   error     // nil when a quorum renewed it within the new validity
}

// renew runs script (an extend script, see kind) on every node with keys, token and ttl, from
// start, and decides at need.
func (c *Client) renew(ctx context.Context, start time.Time, script *redis.Script, keys []string, need int, token string, ttl time.Duration) renewal {
	until := clock.Deadline(start, ttl, c.driftFactor)
	wait := min(c.nodeTimeout, until.Sub(start))
	args := []any{token, strconv.FormatInt(ttl.Milliseconds(), 10)}
	out := ask(c, ctx, wait, need, observed(c, NodeExtend, func(ctx context.Context, i int) (struct{}, error) {
		n, err := script.Run(ctx, c.nodes[i], keys, args...).Int()
		if err == nil && n == 0 {
			err = errNotOwner
		}
		return struct{}{}, err
	}))
	if now := c.clock.Now(); out.Quorum && now.Before(until) {
		decided(c, ctx, out, now.Sub(start), nil)
		return renewal{until: until}
	}
	gone := 0
	for _, rep := range out.Replies {
		if errors.Is(rep.Err, errNotOwner) {
			gone++
		}
	}
	errs := []error{ErrNotHeld}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	errs = append(errs, nodeErrors(c, ctx, out, wait)...)
	err := errors.Join(errs...)
	decided(c, ctx, out, c.clock.Now().Sub(start), err)
	return renewal{until: until, gone: gone > len(c.nodes)-need, err: err}
}

// Unlock releases the lock on every node where it still holds this lock's token (compare and
// delete, atomic on each node); it never deletes another owner's key. It returns nil when a
// quorum released it, else an error wrapping ErrNotHeld and a *NodeError for each node that
// failed: the lock had expired, was taken over, or was already released. Lost closes either way.
//
// Unlock goes on when ctx is already cancelled, since a release matters most then; it is bounded
// by the node timeout instead. Nodes that answer after the decision are still released. The
// release is announced to waiting Lock calls of every Client.
func (l *Lock) Unlock(ctx context.Context) error {
	ctx, call := l.c.begin(ctx, OpUnlock, &l.spec)
	err := l.unlock(ctx)
	l.c.end(ctx, call, err)
	return err
}

// unlock is Unlock.
func (l *Lock) unlock(ctx context.Context) error {
	c := l.c
	if err := c.enter(); err != nil {
		l.end()
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()

	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
	start := c.clock.Now()
	// A node whose acquisition reply is still in flight is released by late once the reply is
	// in (a release sent now could overtake the SET): the first Unlock waits for that.
	r := quorum.New[struct{}](len(c.nodes))
	l.mu.Lock()
	u := l.releaserLocked()
	call := observed(c, NodeRelease, func(ctx context.Context, i int) (struct{}, error) {
		return struct{}{}, u.run(ctx, c, i)
	})
	l.endLocked(true)
	first := l.unlocking == nil
	if first {
		l.unlocking = r
	}
	for i := range c.nodes {
		if !first || !slices.Contains(l.pending, i) {
			r.Go(callCtx, &c.bg, i, call)
		}
	}
	l.mu.Unlock()
	out := r.Decide(l.need, callCtx.Done(), nil)
	drain(c, r, out, cancel, nil)
	// This Client's own waiters need not wait for the announcement.
	c.wake.notify(-1, l.stored)
	for _, k := range l.more {
		c.wake.notify(-1, k)
	}
	var err error
	if !out.Quorum {
		err = errors.Join(append([]error{ErrNotHeld}, nodeErrors(c, ctx, out, c.nodeTimeout)...)...)
	}
	decided(c, ctx, out, c.clock.Now().Sub(start), err)
	return err
}

// releaserLocked is Unlock's release on a node: announced, and taking the waiter that acquired
// out of the queue. l.mu is held.
func (l *Lock) releaserLocked() undo {
	if l.relCmd == nil {
		l.relCmd = evalsha(l.release, l.relKeys, l.relArgs...)
	}
	return undo{script: l.release, cmd: l.relCmd}
}

// late takes an acquisition reply that came after the lock was granted. If the lock has ended
// since (a quick Unlock overtook the reply), the node may have taken the key after its release:
// release it now (announced, as Unlock's releases are), and tell the first Unlock how that went.
// A waiter's refusal is released too: it left the waiter in the key's queue, or a writer's
// mark, which the release takes away.
func (l *Lock) late(ctx context.Context, rep quorum.Reply[grant], ttl time.Duration) {
	l.mu.Lock()
	l.pending = slices.DeleteFunc(l.pending, func(i int) bool { return i == rep.Node })
	ended, r := l.ended, l.unlocking
	var u undo
	if ended {
		u = l.releaserLocked()
	}
	l.mu.Unlock()
	if !ended {
		return
	}
	err := errNotOwner
	if taken := errors.Is(rep.Err, errTaken); !taken || l.waited {
		if e := l.c.rollback(ctx, rep.Node, u, ttl); !taken {
			err = e
		}
	}
	if r != nil { // else it ended by its validity or an Extend, not by Unlock
		r.Put(quorum.Reply[struct{}]{Node: rep.Node, Err: err})
	}
}

// do acquires what s says like Lock, runs fn, and releases the lock when fn returns, extending
// it while fn runs (see Client.Do).
func (c *Client) do(ctx context.Context, s *spec, ttl time.Duration, fn func(ctx context.Context) error) error {
	ctx, call := c.begin(ctx, OpDo, s)
	err := c.hold(ctx, s, ttl, fn)
	c.end(ctx, call, err)
	return err
}

// hold is do.
func (c *Client) hold(ctx context.Context, s *spec, ttl time.Duration, fn func(ctx context.Context) error) error {
	if fn == nil {
		return errors.New("redlock: nil fn")
	}
	l, err := c.lock(ctx, s, ttl)
	if err != nil {
		return err
	}
	fnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l.mu.Lock()
	l.onLost = func() { cancel(ErrNotHeld) }
	l.mu.Unlock()
	lost := l.Lost()

	stop := make(chan struct{})
	var keeper sync.WaitGroup
	keeper.Go(func() { l.keep(context.WithoutCancel(ctx), ttl, stop, lost) })
	fnErr := fn(fnCtx)
	close(stop)
	keeper.Wait()

	select {
	case <-lost:
		l.Unlock(ctx) // the keys left on a minority
		return errors.Join(fmt.Errorf("%w: lost while fn ran", ErrNotHeld), fnErr)
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		c.log.WarnContext(ctx, "redlock: release after Do", "kind", l.name, "key", l.key, "err", err)
	}
	return fnErr
}

// keep extends l by ttl whenever a third of the ttl is left, until stop or the lock ends.
func (l *Lock) keep(ctx context.Context, ttl time.Duration, stop, lost <-chan struct{}) {
	c := l.c
	// wait pauses for d on the client's clock and reports whether to go on.
	wait := func(d time.Duration) bool {
		t := c.clock.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-stop:
			return false
		case <-lost:
			return false
		case <-t.C:
			return true
		}
	}
	for wait(l.Until().Sub(c.clock.Now()) - ttl/3) {
		if err := l.Extend(ctx, ttl); err != nil {
			c.log.DebugContext(ctx, "redlock: extension failed; retrying while the lock is valid", "key", l.key, "err", err)
			// Try again soon: Lost closes by itself when the validity runs out first.
			if !wait(min(c.retryDelay(), ttl/10)) {
				return
			}
		}
	}
}
