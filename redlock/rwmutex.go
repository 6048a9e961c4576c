package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// readOps are the commands of an RWMutex's readers, holders of a set on each node whose
// releases announce the writer's key; writeOps its writer's, a plain key holding the token.
type (
	readOps struct {
		holders
		keys wire.RWMutexKeys
	}
	writeOps struct{ keys wire.RWMutexKeys }
)

func (o readOps) acquire(a attempt) command {
	return run(wire.ReadScript, wire.ReadAcquire{Keys: o.keys, Token: a.token, TTL: a.ttl, Watch: wire.Watching(a.waiter, a.lease)})
}

func (o readOps) claim(token string, ttl time.Duration) command {
	return o.acquire(attempt{token: token, ttl: ttl})
}

func (o writeOps) acquire(a attempt) command {
	return run(wire.WriteScript, wire.WriteAcquire{Keys: o.keys, Token: a.token, TTL: a.ttl, Waiter: a.waiter,
		Watch: wire.Watching(a.waiter, a.lease)})
}

func (o writeOps) extend(token string, ttl time.Duration) command {
	return run(wire.ExtendScript, wire.Extend{Key: o.keys.Writer, Token: token, TTL: ttl})
}

func (o writeOps) release(token, channel, waiter string) command {
	return run(wire.WriteReleaseScript, wire.WriteRelease{Keys: o.keys, Token: token, Channel: channel, Waiter: waiter})
}

func (o writeOps) rollback(a attempt, _ string) command { return o.release(a.token, "", "") }

func (o writeOps) claim(token string, ttl time.Duration) command {
	return o.acquire(attempt{token: token, ttl: ttl})
}

func (o writeOps) abandon(waiter, channel string) (command, bool) {
	return run(wire.WriteAbandonScript, wire.WriteAbandon{Keys: o.keys, Waiter: waiter, Channel: channel}), true
}

// An RWMutex is a read-write lock across the Client's nodes: a writer excludes readers and
// writers, readers share it. Both need a majority of the nodes: any two majorities meet on a
// node, which refuses the pair. A writer waiting in Lock marks the nodes so that new readers
// wait behind it, and a stream of readers cannot starve it; TryLock never marks. The mark goes
// when the writer gets the lock or stops waiting, and otherwise expires with the writer's ttl.
//
// Each node keeps the writer under a key whose value is its token, the readers in a sorted set
// scored by when each expires on the node's clock, and the mark, all named as WithKeyPrefix
// says.
// An RWMutex does not exclude a Lock, Semaphore or LockAll of the same key: its keys are its own.
// A context that carries its held lock for writing re-enters it for reading or writing; one that
// carries its held lock for reading re-enters it for reading, and is refused at once for writing
// (see Lock.Context).
type RWMutex struct {
	c           *Client
	read, write *spec
}

// RWMutex returns the read-write lock named key. It sends nothing.
func (c *Client) RWMutex(key string) (*RWMutex, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	keys := c.opts.names.RWMutex(key)
	// Readers and writers wait for the name of the writer's key: every release announces it.
	wake := []string{keys.Writer}
	return &RWMutex{c: c,
		read:  &spec{kind: locktrace.KindRead, key: key, need: c.quorum, wake: wake, ops: readOps{holders{set: keys.Readers, wake: keys.Writer, watch: keys.Watch}, keys}},
		write: &spec{kind: locktrace.KindWrite, key: key, need: c.quorum, wake: wake, ops: writeOps{keys}},
	}, nil
}

// Lock takes the lock for writing for ttl, waiting until no reader or writer holds it, ctx is
// done or the Client is closed, as Client.Lock waits. While it waits, new readers wait too.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.lock(ctx, m.write, ttl)
}

// TryLock makes exactly one attempt to take the lock for writing; it fails with ErrNotAcquired.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.try(ctx, m.write, ttl)
}

// RLock takes the lock for reading for ttl, waiting until no writer holds it or waits for it.
func (m *RWMutex) RLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.lock(ctx, m.read, ttl)
}

// TryRLock makes exactly one attempt to take the lock for reading.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return m.c.try(ctx, m.read, ttl)
}

// Do runs fn holding the lock for writing, as Client.Do does for a key.
func (m *RWMutex) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return m.c.do(ctx, m.write, ttl, fn)
}

// RDo runs fn holding the lock for reading, as Client.Do does for a key.
func (m *RWMutex) RDo(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return m.c.do(ctx, m.read, ttl, fn)
}
