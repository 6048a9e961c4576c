package simulate

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

var errNodeDown = errors.New("simulate: connection refused (node down)")

// A node is one Redis master: a miniredis server whose keys expire by the node's own clock, and
// optionally an asynchronous replica that a failover promotes. Crash, restart and failover swap
// what is behind the node; clients keep dialling the same node.
type node struct {
	name  string
	clock *skew

	mu      sync.Mutex
	srv     *miniredis.Miniredis
	replica *miniredis.Miniredis // nil unless the topology has one
	up      bool
	set     time.Time // the last time given to srv, so that time never runs backwards by accident
}

func newNode(name string, start time.Time) *node {
	n := &node{name: name, clock: newSkew(start), up: true}
	n.srv = n.fresh()
	return n
}

// fresh returns an empty server on the node's clock.
func (n *node) fresh() *miniredis.Miniredis {
	m := miniredis.NewMiniRedis()
	m.SetTime(n.clock.read(time.Now()))
	m.ClockTTL(true)
	return m
}

// dial opens an in-memory connection to the node, as a TCP connect would.
func (n *node) dial() (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.up {
		return nil, errNodeDown
	}
	n.syncLocked()
	return n.srv.Dial()
}

// sync brings the server's time up to the node's clock, which expires what is due. It runs
// before every request reaches the node.
func (n *node) sync() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.syncLocked()
}

func (n *node) syncLocked() {
	now := n.clock.read(time.Now())
	if now.After(n.set) {
		n.set = now
		n.srv.SetTime(now)
		if n.replica != nil {
			n.replica.SetTime(now)
		}
	}
}

// crash stops the node: every connection to it breaks and new ones are refused. Its data stays
// in memory, as it would on disk with appendfsync always.
func (n *node) crash() {
	n.mu.Lock()
	n.up = false
	srv := n.srv
	n.mu.Unlock()
	srv.Close()
}

// restart brings a crashed node back, with its data or empty (no persistence).
func (n *node) restart(keepData bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !keepData {
		n.srv = n.fresh()
	}
	n.up = true
	n.syncLocked()
}

// withReplica gives the node an asynchronous replica.
func (n *node) withReplica() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.replica = n.fresh()
}

// replicate copies the master's keys and their TTLs to the replica, as asynchronous
// replication eventually does.
func (n *node) replicate() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.up || n.replica == nil {
		return
	}
	n.syncLocked()
	n.replica.FlushAll()
	for _, k := range n.srv.Keys() {
		v, err := n.srv.Get(k)
		if err != nil {
			continue // only strings are locks
		}
		n.replica.Set(k, v)
		if ttl := n.srv.TTL(k); ttl > 0 {
			n.replica.SetTTL(k, ttl)
		}
	}
}

// failover crashes the master and promotes the replica, with whatever it had received.
func (n *node) failover() {
	n.mu.Lock()
	old := n.srv
	n.srv, n.replica = n.replica, nil
	n.up = true
	n.syncLocked()
	n.mu.Unlock()
	old.Close()
}

// close shuts the servers down at the end of a run.
func (n *node) close() {
	n.mu.Lock()
	srv, rep := n.srv, n.replica
	n.up = false
	n.mu.Unlock()
	srv.Close()
	if rep != nil {
		rep.Close()
	}
}
