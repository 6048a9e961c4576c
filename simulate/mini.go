package simulate

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Mini is the in-memory backend: every node is a miniredis server whose keys expire by the
// node's own clock, which the simulator sets before every request. Inside a testing/synctest
// bubble a run takes no real time. It is the default.
type Mini struct{}

func (Mini) String() string { return "mini" }

func (Mini) newNode(name string, start time.Time, _ Scenario) *node { return newMiniNode(name, start) }

func (Mini) tcp() bool { return false }

func (Mini) gap(Scenario) string { return "" }

func newMiniNode(name string, start time.Time) *node {
	n := &node{name: name, clock: newSkew(start)}
	m := &mini{clock: n.clock, up: true}
	m.srv = m.fresh()
	n.server = m
	return n
}

// mini serves a node with a miniredis server, and optionally an asynchronous replica that a
// failover promotes. Crash, restart and failover swap what is behind the node.
type mini struct {
	clock *skew

	mu      sync.Mutex
	srv     *miniredis.Miniredis
	replica *miniredis.Miniredis // nil unless the topology has one
	up      bool
	set     time.Time // the last time given to srv, so that time never runs backwards by accident
}

var _ server = (*mini)(nil)

// fresh returns an empty server on the node's clock.
func (m *mini) fresh() *miniredis.Miniredis {
	s := miniredis.NewMiniRedis()
	s.SetTime(m.clock.read(time.Now()))
	s.ClockTTL(true)
	return s
}

func (m *mini) start(context.Context) error { return nil }

// dial opens an in-memory connection to the node, as a TCP connect would.
func (m *mini) dial(context.Context) (net.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up {
		return nil, errNodeDown
	}
	m.syncLocked()
	return m.srv.Dial()
}

// sync brings the server's time up to the node's clock, which expires what is due.
func (m *mini) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncLocked()
}

func (m *mini) syncLocked() {
	now := m.clock.read(time.Now())
	if now.After(m.set) {
		m.set = now
		m.srv.SetTime(now)
		if m.replica != nil {
			m.replica.SetTime(now)
		}
	}
}

// clockChanged does nothing: the next request brings the server's time up to the clock.
func (m *mini) clockChanged() {}

// crash closes the server. Its data stays in memory, as it would on disk with appendfsync
// always.
func (m *mini) crash() {
	m.mu.Lock()
	m.up = false
	srv := m.srv
	m.mu.Unlock()
	srv.Close()
}

// keepOnRestart does nothing: a crashed miniredis keeps its data in memory.
func (m *mini) keepOnRestart() {}

func (m *mini) restart(keepData bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !keepData {
		m.srv = m.fresh()
	}
	m.up = true
	m.syncLocked()
}

func (m *mini) withReplica() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replica = m.fresh()
}

// replicate copies the master's keys and their TTLs to the replica.
func (m *mini) replicate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up || m.replica == nil {
		return
	}
	m.syncLocked()
	m.replica.FlushAll()
	for _, k := range m.srv.Keys() {
		v, err := m.srv.Get(k)
		if err != nil {
			continue // only strings are locks
		}
		m.replica.Set(k, v)
		if ttl := m.srv.TTL(k); ttl > 0 {
			m.replica.SetTTL(k, ttl)
		}
	}
}

func (m *mini) failover() {
	m.mu.Lock()
	old := m.srv
	m.srv, m.replica = m.replica, nil
	m.up = true
	m.syncLocked()
	m.mu.Unlock()
	old.Close()
}

// err is nil: every fault on an in-memory server takes effect.
func (m *mini) err() error { return nil }

func (m *mini) close() {
	m.mu.Lock()
	srv, rep := m.srv, m.replica
	m.up = false
	m.mu.Unlock()
	srv.Close()
	if rep != nil {
		rep.Close()
	}
}
