package redlockgocron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/quorumlock/redlock/redlock"
)

// KeyPrefix is put before a job's name to make the key a Locker marks: the job "report" marks
// "gocron:report" (after the Client's own prefix, if it has one), so that a job's mark never
// blocks a Lock of the same name elsewhere in the program.
const KeyPrefix = "gocron:"

// A Locker is a gocron.Locker that runs each tick of a job on exactly one of the schedulers
// that share it through their Clients. See NewLocker for what it guarantees, and on what
// assumptions.
type Locker struct {
	c   *redlock.Client
	ttl time.Duration
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker returns a Locker that marks each tick of a job for ttl on c's quorum. Pass it to
// gocron.WithDistributedLocker on every scheduler, each with a Client of its own over the same
// nodes.
//
// A tick of a job runs exactly once across the schedulers when
//
//   - the schedulers' ticks of a job coincide: cron and daily jobs do by their clocks; give a
//     DurationJob the same start on every scheduler (gocron.WithStartAt with
//     gocron.WithStartDateTime, a multiple of the interval);
//   - every scheduler starts a tick's run less than ttl/2 - d after the first one does, where
//     d is c's drift allowance (ttl*1% + 2ms by default, see redlock.WithDriftFactor): the
//     offsets of their clocks and their delays in starting a run add up to that spread;
//   - the job's interval is at least 2*ttl, so that a tick's mark is gone before the next tick;
//   - a quorum of nodes answers, at least one scheduler is up, and a split vote (see below)
//     settles within ttl/2: with a node down, that takes up to five of c's node timeouts
//     (redlock.WithNodeTimeout), which is why NewLocker wants a ttl of at least ten;
//   - a Client is closed no sooner than ttl after its scheduler's last run: Close releases the
//     marks the Client holds, and a scheduler that starts that tick later would run it again.
//
// Outside them a tick may run twice (the spread or the interval too short) or nowhere (no
// quorum, a split that did not settle, or an interval too short again). A run is not bounded by
// ttl: a long run goes on after its mark expired, and gocron may start the next tick beside it
// as on a single scheduler (gocron.WithSingletonMode prevents that on each scheduler).
//
// Lock makes one attempt (Client.TryLock). When it is refused because another scheduler holds
// the mark, the tick is that scheduler's. When the schedulers split the nodes so that nobody
// won a quorum, which Redlock rolls back on every node, each of them waits in the key's line
// (Client.Lock) for at most ttl/2 from its call: the line is served in one order on every node,
// so exactly one of them takes the mark, and the others give up when their ttl/2 has passed,
// before the mark can expire.
//
// Each mark is a redlock.Lock that the Locker's Unlock orphans (redlock.Lock.Orphan): the
// Client forgets it, and its key expires with the ttl, whatever the Client does next.
//
// NewLocker fails on a nil c, on a ttl that Client.Lock refuses, and on a ttl shorter than
// ten of c's node timeouts; it sends nothing.
func NewLocker(c *redlock.Client, ttl time.Duration) (*Locker, error) {
	if c == nil {
		return nil, errors.New("redlock: redlockgocron: nil Client")
	}
	// Client.Election checks a ttl as Lock does, and sends nothing.
	if _, err := c.Election(KeyPrefix+"ttl", ttl); err != nil {
		return nil, err
	}
	if least := minTTL(c.NodeTimeout()); ttl < least {
		return nil, fmt.Errorf("redlock: redlockgocron: ttl %v is too short for the Client's node timeout %v: "+
			"a tick that the schedulers split settles within ttl/2, which with a node down takes up to five node "+
			"timeouts; use a ttl of at least %v, or a shorter node timeout (redlock.WithNodeTimeout)", ttl, c.NodeTimeout(), least)
	}
	return &Locker{c: c, ttl: ttl}, nil
}

// minTTL is the least ttl of a Locker whose Client has node timeout d: ten of them, half the ttl
// for the five that settling a split vote takes at most with a node down (an attempt that waits
// for the node that is down, another for the refusal of a tick another scheduler holds, and the
// attempts in line). Measured on three nodes with one down, three schedulers: two node
// timeouts in ttl/2 left ticks run nowhere, three did not.
func minTTL(d time.Duration) time.Duration {
	if d > time.Duration(1<<63-1)/10 {
		return time.Duration(1<<63 - 1)
	}
	return 10 * d
}

// Lock claims the current tick of the job named key. It returns a gocron.Lock when this
// scheduler runs the tick; an error wrapping redlock.ErrNotAcquired when another scheduler
// does, when no quorum answered, or when a split vote was not settled in this scheduler's
// favour within ttl/2; or ctx's error. gocron skips the run on an error.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	deadline := time.Now().Add(l.ttl / 2)
	name := KeyPrefix + key
	lock, err := l.c.TryLock(ctx, name, l.ttl)
	if err == nil {
		return mark{lock}, nil
	}
	if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
		return nil, fmt.Errorf("redlock: redlockgocron: job %q: %w", key, err)
	}
	if in, ierr := l.c.Inspect(ctx, name); ierr == nil && in.Held {
		return nil, fmt.Errorf("redlock: redlockgocron: job %q: this tick runs on another scheduler: %w", key, err)
	}
	// A split vote, or a mark that vanished: settle it in line, before the mark of whoever
	// wins could expire.
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if lock, err = l.c.Lock(wait, name, l.ttl); err != nil {
		return nil, fmt.Errorf("redlock: redlockgocron: job %q: not acquired within ttl/2 (%v) after a split vote: %w", key, l.ttl/2, err)
	}
	return mark{lock}, nil
}

// A mark is a tick that this scheduler runs. Its key stays until it expires with the ttl.
type mark struct{ lock *redlock.Lock }

// Unlock leaves the mark to expire with its ttl (redlock.Lock.Orphan), so that the schedulers
// that start the same tick later are refused, even after this scheduler's Client closed.
func (m mark) Unlock(ctx context.Context) error {
	return m.lock.Orphan(ctx)
}
