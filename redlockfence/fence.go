package redlockfence

import (
	"errors"
	"fmt"
	"math"
)

// ErrStale is the error of a write whose token is lower than the highest accepted for its
// resource: a later holder of the lock has written since. The write did not happen.
var ErrStale = errors.New("redlockfence: stale fencing token")

// ErrFenceLost is the error of a Redis guard's write to a resource that has no record of its
// highest accepted token while a key the write touches is there: the record was evicted, lost
// in a restart while the data came back, or deleted, or the data was loaded before the first
// guarded write without seeding the record; a stale holder can no longer be told from the
// current one. The write did not happen. It does not wrap ErrStale: the current holder gets it
// too. docs/fencing.md says how to seed a record and how to recover.
var ErrFenceLost = errors.New("redlockfence: fencing record lost")

// errNoFence is the error of token 0, the Fence of a lock made without redlock.WithFencing.
var errNoFence = errors.New("redlockfence: fencing token 0: the lock was made without redlock.WithFencing, so it has no token to check")

// stale returns an error wrapping ErrStale that says what was refused.
func stale(resource string, token uint64, highest string) error {
	return fmt.Errorf("%w: resource %q: token %d is lower than %s, the highest accepted", ErrStale, resource, token, highest)
}

// checkArgs checks what every guard's call needs: a resource and a token from a fenced lock;
// max is the largest token the guard can keep.
func checkArgs(resource string, token, max uint64) error {
	switch {
	case resource == "":
		return errors.New("redlockfence: empty resource name")
	case token == 0:
		return errNoFence
	case token > max:
		return fmt.Errorf("redlockfence: fencing token %d is larger than %d, the largest this guard keeps", token, max)
	}
	return nil
}

// maxSQL is the largest token a SQL guard keeps: its column is a signed 64-bit integer.
const maxSQL = math.MaxInt64
