package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// multiOps are the commands of LockAll: every key is set, or none, on each node.
type multiOps struct {
	locks   []wire.MutexKeys
	keys    []string // the lock keys
	watches []string // their watch marks
	lease   time.Duration
}

func (o multiOps) acquire(a attempt) command {
	return run(wire.MultiAcquireScript, wire.MultiWait{MultiAcquire: wire.MultiAcquire{Keys: o.keys, Token: a.token, TTL: a.ttl},
		Watches: o.watches, Watch: wire.Watching(a.waiter, a.lease)})
}

func (o multiOps) extend(token string, ttl time.Duration) command {
	return run(wire.MultiExtendScript, wire.MultiAcquire{Keys: o.keys, Token: token, TTL: ttl})
}

func (o multiOps) release(token, channel, _ string) command {
	return run(wire.MultiReleaseScript, wire.MultiRelease{Locks: o.locks, Token: token, Channel: channel, Lease: o.lease})
}

func (o multiOps) rollback(a attempt, channel string) command {
	return run(wire.MultiReleaseScript, wire.MultiRelease{Locks: o.locks, Token: a.token, Channel: channel, Rollback: true, Lease: o.lease})
}

func (o multiOps) claim(token string, ttl time.Duration) command {
	return run(wire.ClaimScript, wire.MultiAcquire{Keys: o.keys, Token: token, TTL: ttl})
}

func (multiOps) abandon(string, string) (command, bool) { return nil, false }

// LockAll acquires every key of keys for ttl, as one lock, waiting until it succeeds, ctx is
// done or the Client is closed, as Lock waits: a release of any of the keys wakes it. Each node
// sets all the keys or none of them, in one script, and a majority of nodes must set them.
//
// Each key is stored exactly as Lock stores it (the prefix and the key, a string whose value
// is Lock.Token), so LockAll and Lock of any of its keys exclude each other, with this Client
// and with other Redlock clients. Two LockAll calls whose key sets overlap never hold a shared
// key at once, and never deadlock: no node ever holds part of a set, and a refused attempt
// holds nothing while it waits. Lock.Keys returns keys; Resume does not take the lock over.
// When ctx carries a held LockAll or Lock that holds every key of keys, LockAll re-enters it,
// and a Lock of one of a held LockAll's keys re-enters the LockAll; when the held lock holds
// some of keys but not all, LockAll fails at once, since it would wait for itself (see
// Lock.Context).
//
// Bad input is an error and sends nothing: no keys, an empty key, a key given twice, and, when
// a node is a *redis.ClusterClient, keys in different hash slots (a script touches one slot):
// a common hash tag puts them in one, as in "{order:7}:stock" and "{order:7}:invoice".
func (c *Client) LockAll(ctx context.Context, keys []string, ttl time.Duration) (*Lock, error) {
	s, err := c.multi(keys)
	if err != nil {
		return nil, err
	}
	return c.lock(ctx, s, ttl)
}

// TryLockAll makes exactly one attempt to acquire every key of keys for ttl, as LockAll.
func (c *Client) TryLockAll(ctx context.Context, keys []string, ttl time.Duration) (*Lock, error) {
	s, err := c.multi(keys)
	if err != nil {
		return nil, err
	}
	return c.try(ctx, s, ttl)
}

// multi returns the spec of a LockAll of keys.
func (c *Client) multi(keys []string) (*spec, error) {
	if len(keys) == 0 {
		return nil, errors.New("redlock: no keys")
	}
	o := multiOps{locks: make([]wire.MutexKeys, len(keys)), keys: make([]string, len(keys)), watches: make([]string, len(keys)),
		lease: c.lease()}
	for i, k := range keys {
		if err := c.checkKey(k); err != nil {
			return nil, fmt.Errorf("redlock: key %d: %w", i, err)
		}
		if j := slices.Index(keys[:i], k); j >= 0 {
			return nil, fmt.Errorf("redlock: key %q given twice (%d and %d)", k, j, i)
		}
		o.locks[i] = c.opts.names.Mutex(k)
		o.keys[i], o.watches[i] = o.locks[i].Lock, o.locks[i].Watch
	}
	if err := c.sameSlot(keys, o.keys); err != nil {
		return nil, err
	}
	return &spec{kind: locktrace.KindMulti, key: keys[0], keys: slices.Clone(keys), need: c.quorum, wake: o.keys,
		multi: wire.MultiMark, ops: o}, nil
}

// sameSlot fails when a node is a Redis Cluster and the stored keys are not all in one slot.
func (c *Client) sameSlot(keys, stored []string) error {
	node := c.clusterNode
	if node < 0 {
		return nil
	}
	first := keyslot.Of(stored[0])
	for i, k := range stored {
		if s := keyslot.Of(k); s != first {
			return fmt.Errorf("redlock: keys %q and %q are in hash slots %d and %d, and node %d is a Redis Cluster, "+
				"where one script touches one slot: give them a common hash tag, as in \"{%s}%s\" and \"{%s}%s\"",
				keys[0], keys[i], first, s, node, keys[0], keys[0], keys[0], keys[i])
		}
	}
	return nil
}
