package simulate

import (
	"context"
	"errors"
	"net"
	"time"
)

var errNodeDown = errors.New("simulate: connection refused (node down)")

// A node is one Redis master as the scenarios see it: a name, its own clock, and the faults a
// scenario hits it with. Its backend's server does the rest: in-memory servers (mini) or
// redis-server processes (real). Clients keep dialling the same node whatever its server
// swaps behind it.
type node struct {
	name  string
	clock *skew
	server
}

// A server is what a backend runs for one node.
type server interface {
	// start brings the node up before the run's clock starts.
	start(ctx context.Context) error
	// dial opens a connection to the node as it is now (its master after a failover).
	dial(ctx context.Context) (net.Conn, error)
	// sync runs before every request reaches the node.
	sync()
	// clockChanged follows a jump or a new rate of the node's clock.
	clockChanged()
	// crash stops the node at once: every connection breaks and new ones are refused.
	crash()
	// keepOnRestart is called while the scenario is set up, for a node that a fault will
	// restart with its data: it must persist every write (AOF with appendfsync always).
	keepOnRestart()
	// restart brings a crashed node back, with its data or empty.
	restart(keepData bool)
	// withReplica gives the node an asynchronous replica, before start.
	withReplica()
	// replicate lets the replica catch up with its master, as asynchronous replication
	// eventually does.
	replicate()
	// failover kills the master and promotes the replica, with whatever it had received.
	failover()
	// err is the first fault that did not take effect (a server that did not come back), nil
	// when every one did: the run's verdict then means nothing.
	err() error
	// close stops everything at the end of a run.
	close()
}

// jump moves the node's clock by d at once (forward when d > 0).
func (n *node) jump(d time.Duration) {
	n.clock.jump(d)
	n.clockChanged()
}

// setRate makes the node's clock run at rate r from now on.
func (n *node) setRate(r float64) {
	n.clock.setRate(r)
	n.clockChanged()
}
