package simulate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// A submitter takes forms: issue makes a form's token valid for its life, and submit accepts
// a submission of it at most once.
type submitter interface {
	issue(ctx context.Context, f form) error
	// rng draws the pauses of the submission's retries; it is the client's.
	submit(ctx context.Context, f form, rng *rand.Rand) (accepted bool, err error)
}

// A form is what a submitter needs to know of one.
type form struct {
	token string
	life  time.Duration // the token's lifetime
	// settle is how long a refused attempt's roll-back takes at most: twice the node timeout.
	settle time.Duration
}

var (
	_ submitter = redlockLocker{}
	_ submitter = (*naive)(nil)
)

// issue does nothing: this library's mark needs no token stored beforehand.
func (redlockLocker) issue(context.Context, form) error { return nil }

// submit takes "submit:"+token for the form's life and orphans it. A refused submission is a
// duplicate when a quorum holds the mark under one token on two looks, f.settle apart: a
// refused attempt's keys, its own or a split vote's, hold the key only until their roll-backs
// land. Refused otherwise, it tries again after a random pause that doubles with every try.
func (l redlockLocker) submit(ctx context.Context, f form, rng *rand.Rand) (bool, error) {
	key := "submit:" + f.token
	held := ""
	for try := 0; ; try++ {
		mark, err := l.c.TryLock(ctx, key, f.life)
		if err == nil {
			if err := mark.Orphan(ctx); err != nil {
				return false, err
			}
			return true, nil
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
			return false, err
		}
		seen, err := l.c.Inspect(ctx, key)
		switch {
		case err == nil && seen.Held && seen.Token == held:
			return false, nil
		case try >= 20:
			return false, fmt.Errorf("simulate: no verdict on %s after %d tries: %w", key, try+1, err)
		case err == nil && seen.Held:
			held = seen.Token
			time.Sleep(f.settle)
		default:
			held = ""
			time.Sleep(time.Duration(rng.Int64N(int64(time.Millisecond) << min(try, 6))))
		}
	}
}

func (n *naive) issue(ctx context.Context, f form) error {
	return n.rdb.Set(ctx, "form:"+f.token, f.token, f.life).Err()
}

// submit runs seed 001's script, the compare-and-delete of the naive locks' release.
func (n *naive) submit(ctx context.Context, f form, _ *rand.Rand) (bool, error) {
	deleted, err := compareAndDelete.Run(ctx, n.rdb, []string{"form:" + f.token}, f.token).Int()
	return deleted == 1, err
}

// spread returns how many nodes hold key under the token that a quorum holds it under.
func spread(ctx context.Context, c *redlock.Client, key string) (int, error) {
	in, err := c.Inspect(ctx, key)
	n := 0
	for _, node := range in.Nodes {
		if in.Held && node.Token == in.Token {
			n++
		}
	}
	return n, err
}
