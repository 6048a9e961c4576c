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
// stores p+"k". Lock.Key still returns "k". Default "" (the key is stored as given).
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
