package redlock

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// An Option configures a Client. New rejects an option whose value is out of range.
type Option func(*options) error

type options struct {
	driftFactor float64
	nodeTimeout time.Duration
	retryMin    time.Duration
	retryMax    time.Duration
	names       wire.Names // the key prefix's
	clock       clock.Clock
	log         *slog.Logger
	fencing     bool
	observer    locktrace.Observer
	owner       string
	leased      bool // a node is a cluster: its waiters need leases (see driver.Clustered)
}

func defaultOptions() options {
	return options{
		driftFactor: 0.01,
		nodeTimeout: 100 * time.Millisecond,
		retryMin:    20 * time.Millisecond,
		retryMax:    100 * time.Millisecond,
		clock:       clock.Real,
		log:         slog.New(slog.DiscardHandler),
	}
}

// applyOptions returns the defaults with opts applied, or the first option's error.
func applyOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return o, errors.New("redlock: nil option")
		}
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// WithDriftFactor sets how fast clocks may drift apart, as a fraction of the TTL: a lock's
// validity is shortened by ttl*f + 2ms. Default 0.01; valid range [0, 0.5).
func WithDriftFactor(f float64) Option {
	return func(o *options) error {
		if !(f >= 0 && f < 0.5) { // also rejects NaN
			return fmt.Errorf("redlock: drift factor %v out of range [0, 0.5)", f)
		}
		o.driftFactor = f
		return nil
	}
}

// WithNodeTimeout bounds how long one call waits for one node. A node that has not answered by
// then counts as failed, whatever its go-redis client's own timeouts are. Keep it small against
// the TTL: an acquisition also stops waiting when the validity is used up. Default 100ms.
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("redlock: node timeout %v must be positive", d)
		}
		o.nodeTimeout = d
		return nil
	}
}

// WithRetryDelay sets the pause between two attempts of a waiting call that no release woke and
// that has no place in a line to renew (its Client does not hear releases yet, or no node gave
// it a place; a Semaphore's, an RWMutex's reader, a LockAll), drawn uniformly from [min, max]
// so that contending clients do not retry in step. A waiter renews its place in a key's line
// every half of max + 3 × the node timeout (its lease; every two leases while others are ahead
// of it), and a key handed to a waiter waits for it one lease at most, so a waiter that does
// not come holds it up that long at most.
// Default 20ms to 100ms.
func WithRetryDelay(min, max time.Duration) Option {
	return func(o *options) error {
		if min < 0 || max <= 0 || max < min {
			return fmt.Errorf("redlock: retry delay [%v, %v] must satisfy 0 <= min <= max, max > 0", min, max)
		}
		o.retryMin, o.retryMax = min, max
		return nil
	}
}

// WithKeyPrefix puts p before every key and channel the Client touches, for namespacing and
// for ACLs: with prefix "app:", an ACL user limited to keys "~app:*" and channels "&app:*" can
// do everything a lock needs. Lock(ctx, "k", ttl) stores the key "app:k", a plain string
// holding the lock's token, as other Redlock clients store it; Lock.Key still returns "k".
// Default "" (keys are stored as given).
//
// The library's own keys and channels start with the prefix and "~redlock:": a key's line of
// waiting Lock calls ("app:~redlock:queue:{app:k}k" and "...:leases:..."), with WithFencing
// its counter ("...:fence:..."), a Semaphore's holders and an RWMutex's keys, each in the lock
// key's Redis Cluster hash slot; releases are announced on "app:~redlock:released" and
// "app:~redlock:released:" followed by a Client's id. A lock key may not start with
// "~redlock:", so no lock is ever another's companion.
//
// A prefix is either free of "{" or holds a whole hash tag: "{tenant}:" puts every lock of the
// Client in the tag's slot. Any other "{" is refused, and so is a prefix longer than 1,024
// bytes, the limit of a key.
func WithKeyPrefix(p string) Option {
	return func(o *options) error {
		names, err := wire.NewNames(p)
		if err != nil {
			return fmt.Errorf("redlock: %w", err)
		}
		o.names = names
		return nil
	}
}

// WithClock sets the clock that measures elapsed time and validity and paces retries.
// Default clock.Real.
func WithClock(c clock.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("redlock: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithLogger sets where the client reports what it does: attempts at Debug, failed clean-ups
// at Warn. Default: nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("redlock: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithFencing gives every acquisition a fencing token, Lock.Fence, that strictly increases from
// one acquisition of a key to the next, by any client of any process. Hand it to the resource
// the lock protects and let the resource refuse a token lower than the highest it has accepted:
// a holder that was paused past its validity is then refused, which no lock alone can do.
//
// It costs a second round trip per acquisition and one counter per key on each node (named as
// WithKeyPrefix says), kept forever. Round 1 sets the key and reads each node's counter and
// clock atomically; the token is the larger of the highest counter + 1 and the median of at
// least three clocks (microseconds): those of the nodes that said yes and, when fewer than three
// did, the Client's own as often as it takes. Round 2 raises the counter to the token on every
// node still holding the key, and the lock is acquired only when that reached a quorum within
// the validity. Any later acquisition meets round 2's quorum on some node, so its token is
// larger. Assumed: no two nodes lose their data within one ttl, and of the clocks an acquisition
// reads at most one is far off (the median ignores it); docs/locks.md says exactly what that
// tolerates. Default: off, Fence 0.
func WithFencing() Option {
	return func(o *options) error {
		o.fencing = true
		return nil
	}
}

// maxOwner bounds an owner's length: it travels in every token.
const maxOwner = 128

// WithOwner stores owner with every lock the Client takes (a host name, a process, a job), so
// that Client.Inspect and redlock status show who holds a key. It is part of the token stored
// on the nodes: the token's 128 random bits, then "~" and owner. owner is 1 to 128 bytes of
// printable text without a comma, and comes back from Inspect exactly as given ("~" and spaces
// included). A comma is refused: Inspect joins the tokens and owners of a Semaphore's holders
// with commas, so an owner holding one could not be told apart from two. Default: none.
func WithOwner(owner string) Option {
	return func(o *options) error {
		if owner == "" || len(owner) > maxOwner || strings.ContainsFunc(owner, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return fmt.Errorf("redlock: owner %q must be 1 to %d bytes of printable text", owner, maxOwner)
		}
		if strings.Contains(owner, ",") {
			return fmt.Errorf("redlock: owner %q has a comma, which Inspect uses to separate owners", owner)
		}
		o.owner = owner
		return nil
	}
}

// satAdd returns a+b, or the largest Duration when that overflows.
func satAdd(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return time.Duration(1<<63 - 1)
}

// satMul returns d*n for d, n >= 0, or the largest Duration when that overflows.
func satMul(d time.Duration, n int64) time.Duration {
	if n != 0 && d > time.Duration(1<<63-1)/time.Duration(n) {
		return time.Duration(1<<63 - 1)
	}
	return d * time.Duration(n)
}
