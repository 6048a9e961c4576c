package goredisnode

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A refusals fails the calls to a node at once while the node refuses connections (its process
// is gone), with the refusal's error. A go-redis client made with its defaults dials such a
// node again and again until the caller's deadline, so each call would cost the node timeout,
// and a round that needs the node's answer would wait that long, where a refusal is a fast and
// certain no. A node that refused is given a call again after a while, and is found back when
// that call gets through. A stopped node (silent, not refusing) is not affected: its
// connections are accepted.
type refusals struct {
	last atomic.Pointer[refusal] // nil while the node is not refusing
}

type refusal struct {
	err   error     // the refused dial's
	until time.Time // calls fail at once until then
}

// refusedFor is how long a node that refused a connection is left alone: its calls fail at once
// meanwhile, then the next goes through. A node that restarts should stay away longer than
// that anyway, for a lock's ttl (see docs/locks.md).
func refusedFor(nodeTimeout time.Duration) time.Duration { return max(time.Second, nodeTimeout) }

// send returns a send function that goes through r: through to send, unless the node is
// refusing connections.
func (r *refusals) send(send func(ctx context.Context, cmd redis.Cmder) error, nodeTimeout time.Duration) func(ctx context.Context, cmd redis.Cmder) error {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if last := r.last.Load(); last != nil && time.Now().Before(last.until) {
			cmd.SetErr(last.err)
			return last.err
		}
		err := send(ctx, cmd)
		switch {
		case err != nil && refused(err):
			r.last.Store(&refusal{err: err, until: time.Now().Add(refusedFor(nodeTimeout))})
		case r.last.Load() != nil && (err == nil || errors.As(err, new(redis.Error))):
			r.last.Store(nil) // it answered
		}
		return err
	}
}

// refused reports whether err is a refused dial. It is asked only of errors: the target of
// errors.As escapes, and a call that succeeded should not pay for it.
func refused(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
