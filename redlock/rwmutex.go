package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/redlock/internal/keyslot"
)

var (
	readKind  = &kind{name: "read lock", acquire: readScript, extend: holdersExtendScript, release: holdersReleaseScript}
	writeKind = &kind{name: "write lock", acquire: writeScript, extend: extendScript, release: writeReleaseScript, abandon: writeAbandonScript}
)

// An RWMutex is a read-write lock across the Client's nodes: a writer excludes readers and
// writers, readers share it. Both need a majority of the nodes: any two majorities meet on a
// node, which refuses the pair. A writer waiting in Lock marks the nodes so that new readers
// wait behind it, and a stream of readers cannot starve it; TryLock never marks. The mark goes
// when the writer gets the lock or stops waiting, and otherwise expires with the writer's ttl.
//
// Each node keeps the writer under "rwlock:{key}" (a string whose value is the token), the
// readers in the sorted set "readers:{key}", scored by when each expires on the node's clock,
// and the mark under "writing:{key}", all named in the key's hash slot as WithKeyPrefix says.
// An RWMutex does not exclude a Lock, Semaphore or LockAll of the same key: its keys are its own.
type RWMutex struct {
	c           *Client
	read, write spec
}

// RWMutex returns the read-write lock named key. It sends nothing.
func (c *Client) RWMutex(key string) (*RWMutex, error) {
	if key == "" {
		return nil, errors.New("redlock: empty key")
	}
	stored := c.prefix + key
	writer := keyslot.Companion("rwlock", stored)
	readers := keyslot.Companion("readers", stored)
	mark := keyslot.Companion("writing", stored)
	keys := []string{writer, readers, mark}
	// Readers and writers wait for the name of the writer's key: every release announces it.
	m := &RWMutex{c: c}
	m.read = spec{kind: readKind, need: c.quorum, key: key, stored: writer, acqKeys: keys, extKeys: keys[1:2], relKeys: keys[:2]}
	m.write = spec{kind: writeKind, need: c.quorum, key: key, stored: writer, acqKeys: keys, extKeys: keys[:1], relKeys: []string{writer, mark}}
	return m, nil
}

// Lock takes the lock for writing for ttl, waiting until no reader or writer holds it, ctx is
// done or the Client is closed, as Client.Lock waits. While it waits, new readers wait too.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.lock(ctx, &m.write, ttl)
}

// TryLock makes exactly one attempt to take the lock for writing; it fails with ErrNotAcquired.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.try(ctx, &m.write, ttl)
}

// RLock takes the lock for reading for ttl, waiting until no writer holds it or waits for it.
func (m *RWMutex) RLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.lock(ctx, &m.read, ttl)
}

// TryRLock makes exactly one attempt to take the lock for reading.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.try(ctx, &m.read, ttl)
}

// Do runs fn holding the lock for writing, as Client.Do does for a key.
func (m *RWMutex) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return m.c.do(ctx, &m.write, ttl, fn)
}

// RDo runs fn holding the lock for reading, as Client.Do does for a key.
func (m *RWMutex) RDo(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return m.c.do(ctx, &m.read, ttl, fn)
}
