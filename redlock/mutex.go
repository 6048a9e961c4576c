package redlock

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/quorum"
)

// The mutex: the key stored as a plain string whose value is the token, SET NX PX when nobody
// waits, and the acquire script for a waiter in the key's queue or with fencing.
var (
	mutexKind  = &kind{name: "lock", label: KindMutex, plain: true, queued: true, acquire: acquireScript, extend: extendScript, release: releaseScript, abandon: releaseScript}
	fencedKind = &kind{name: "lock", label: KindMutex, queued: true, fenced: true, acquire: acquireScript, extend: extendScript, release: releaseScript, abandon: releaseScript}
)

// mutex returns the spec of a Lock of key: its acquire script's KEYS are the stored key, its
// queue and, with fencing, its counter.
func (c *Client) mutex(key string) spec {
	stored := c.prefix + key
	k, keys := mutexKind, []string{stored, queueKey(stored)}
	if c.fencing {
		k, keys = fencedKind, append(keys, fenceKey(stored))
	}
	return spec{kind: k, need: c.quorum, key: key, stored: stored, acqKeys: keys, extKeys: keys[:1], relKeys: keys[:2]}
}

// Lock acquires key for ttl, retrying until it succeeds, ctx is done or the Client is closed.
//
// It does not poll. After a failed attempt, the Client's waiters for one key queue behind each
// other, so that only one of them contends with other processes at a time. That one's attempts
// put it in the key's queue on the nodes (see WithKeyPrefix for the key names). Unlock then
// hands the key over on every node to the waiter first in that node's queue: the node sets the
// key to that waiter's name for the waiter's ttl and tells the waiter's Client (one
// subscription per node serves the whole Client). The waiter holds the lock once a quorum of
// nodes told it so, without a round trip of its own, and its validity counts from the attempt
// that put it in the queue; after a wait longer than a quarter of the ttl it takes the key over
// with one more attempt instead, for a full validity. A node hands the key only to a waiter
// whose Client still listens there, so a crashed process is passed over; a waiter that gives
// up hands on what it was given (one whose Client was closed leaves it to expire with its ttl,
// as a crashed holder does). On Redis Cluster nodes and WithFencing, the release wakes
// the waiter named instead, which tries again at once; so does a waiter whose turn follows a
// holder of its own Client, woken by that holder's Unlock.
//
// A Lock call for a key the Client waited for lately does not cut ahead of the queue either:
// its first attempt joins it when another waiter heads it. So waiters of different processes
// are served in the order they began waiting, and a release does not wake them all to split
// the nodes between them. A jittered timer (WithRetryDelay) is the fallback for lost
// announcements, for a hand-over that reached less than a quorum, and for locks that expire
// instead of being released. When an attempt still lost a split vote (it won some nodes,
// another process won others, nobody a majority), the contender that won more nodes retries
// first, so that they do not collide again.
//
// On failure the error wraps ErrNotAcquired, the last attempt's *NodeError for each node that
// did not say yes, and ctx.Err() or ErrClosed when that is what ended the wait.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	s := c.mutex(key)
	return c.lock(ctx, &s, ttl)
}

// TryLock makes exactly one attempt to acquire key for ttl. It fails with ErrNotAcquired,
// wrapping a *NodeError for each node that did not say yes.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	s := c.mutex(key)
	return c.try(ctx, &s, ttl)
}

// Do acquires key like Lock, runs fn, and releases the lock when fn returns. While fn runs the
// lock is extended by ttl whenever a third of the ttl is left. If the lock cannot be proved held
// (no extension reached a quorum before the validity ended, or the key was taken from a
// majority), fn's context is cancelled at once with cause ErrNotHeld (see context.Cause), Lost
// closes, and Do returns an error wrapping ErrNotHeld and fn's error. Otherwise Do returns fn's
// error. fn must stop using the protected resource when its context is done.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	s := c.mutex(key)
	return c.do(ctx, &s, ttl, fn)
}

// queueKey names the queue of contenders waiting for the key stored, in its hash slot.
func queueKey(stored string) string { return keyslot.Companion("queue", stored) }

// fenceKey names the fencing counter of the key stored, in its hash slot.
func fenceKey(stored string) string { return keyslot.Companion("fence", stored) }

// fenceToken is the fencing token for the nodes that said yes: the larger of their highest
// counter + 1 and the median of their clocks, which one far-off clock cannot move.
func fenceToken(replies []quorum.Reply[grant]) uint64 {
	var top uint64
	var clocks []uint64
	for _, rep := range replies {
		if rep.Err == nil {
			top = max(top, rep.Value.counter)
			clocks = append(clocks, rep.Value.micros)
		}
	}
	slices.Sort(clocks)
	return max(top+1, clocks[(len(clocks)-1)/2])
}

// fenceRound is fencing's round 2: raise the counter to fence on every node still holding our
// key, and report whether a quorum did so before until. keys are the acquire script's: the
// stored key, its queue and its fencing counter.
func (c *Client) fenceRound(ctx context.Context, need int, keys []string, token string, fence uint64, until time.Time) (bool, []error) {
	wait := until.Sub(c.clock.Now())
	if wait <= 0 {
		return false, []error{}
	}
	wait = min(c.nodeTimeout, wait)
	t := strconv.FormatUint(fence, 10)
	out := ask(c, ctx, wait, need, observed(c, NodeFence, func(ctx context.Context, i int) (struct{}, error) {
		n, err := fenceScript.Run(ctx, c.nodes[i], []string{keys[0], keys[2]}, token, t).Int()
		if err == nil && n == 0 {
			err = errNotOwner
		}
		return struct{}{}, err
	}))
	if out.Quorum {
		return true, nil
	}
	return false, nodeErrors(c, ctx, out, wait)
}
