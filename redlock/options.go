package redlock

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/quorumlock/redlock/clock"
)

// An Option configures a Client. New rejects an option whose value is out of range.
type Option func(*options) error

type options struct {
	driftFactor float64
	nodeTimeout time.Duration
	retryMin    time.Duration
	retryMax    time.Duration
	prefix      string
	clock       clock.Clock
	log         *slog.Logger
	fencing     bool
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

// WithRetryDelay sets the pause between two attempts of Lock, drawn uniformly from [min, max]
// so that contending clients do not retry in step. Default 20ms to 100ms.
func WithRetryDelay(min, max time.Duration) Option {
	return func(o *options) error {
		if min < 0 || max <= 0 || max < min {
			return fmt.Errorf("redlock: retry delay [%v, %v] must satisfy 0 <= min <= max, max > 0", min, max)
		}
		o.retryMin, o.retryMax = min, max
		return nil
	}
}

// WithKeyPrefix puts p before every key on the nodes, for namespacing: Lock(ctx, "k", ttl)
// stores p+"k". Lock.Key still returns "k". Default "" (the key is stored as given). Beside the
// key, a node may hold the key's queue of waiting Lock calls (a sorted set that expires a ttl
// after its last waiter joined), and with WithFencing its counter. They are named in the key's
// Redis Cluster hash slot, from the stored key s (the prefix and the key):
//
//   - "queue:{s}" and "fence:{s}" when s has no hash tag and no "}";
//   - "queue:{t}s" and "fence:{t}s" when s has a hash tag t, as in "{user:7}:profile";
//   - "queue:{h}s" and "fence:{h}s" when s has no hash tag but a "}" ("a}b"), h being a short
//     brace-free tag of s's slot.
//
// A prefix with a hash tag, such as "{tenant}:", puts every lock of the Client in one slot.
// A Semaphore keeps its holders under "semaphore:" and an RWMutex its writer, readers and
// waiting writer's mark under "rwlock:", "readers:" and "writing:", named the same way.
// Releases are announced on channel p+"redlock:released", or, when they name a waiter, on its
// Client's own channel, p+"redlock:released:" and an id.
func WithKeyPrefix(p string) Option {
	return func(o *options) error {
		o.prefix = p
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
// It costs a second round trip per acquisition and one counter per key on each node,
// "fence:{key}" (named as WithKeyPrefix says), kept forever. Round 1 sets the key and
// reads each node's counter and clock atomically; the token is the larger of the highest
// counter + 1 and the median of the clocks (microseconds) of the nodes that said yes; round 2
// raises the counter to the token on every node still holding the key, and the lock is acquired
// only when that reached a quorum within the validity. Any later acquisition meets round 2's
// quorum on some node, so its token is larger. Assumed: no two nodes lose their data within one
// ttl, and at most one node's clock is far off (the median ignores it). Default: off, Fence 0.
func WithFencing() Option {
	return func(o *options) error {
		o.fencing = true
		return nil
	}
}
