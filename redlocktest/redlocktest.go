// Package redlocktest checks that a driver.Node implementation runs the redlock library, as
// net/http/httptest helps test HTTP code: Run starts real redis-server processes on free
// loopback ports and runs one conformance table on Clients over them, the same table that the
// library's own go-redis nodes pass. RunCluster runs it where every node is a Redis Cluster.
//
// The table: exclusion under contention (goroutines of several Clients on one key, overlaps
// counted), the roll-back of a refused attempt, expiry, the owner check of a release
// (ErrNotHeld), a waiter woken by the announcement of a release alone, fencing tokens that
// strictly increase, every primitive (Semaphore, RWMutex, LockAll, Resume, Do), the Observer, a
// node stopped with SIGSTOP and a slow node (both decided without them), Close's bound with a
// node stopped, the servers' error replies (READONLY, NOPERM) named, and replies of the wrong
// shape, with a count of the commands each refusing server received, which a client that
// resends a command fails. RunNode checks the Node contract call by call, and the doctor's
// Check of such nodes, for an adapter's own tests. Both need redis-server (7 or later) on the PATH: without it they skip, or fail when
// REDLOCK_REQUIRE_REDIS is set or CI=true.
//
// An adapter module tests its nodes with a Connect of its own:
//
//	func TestConformance(t *testing.T) {
//		redlocktest.Run(t, func(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
//			nodes := make([]driver.Node, len(addrs))
//			for i, addr := range addrs {
//				client := newClient(t, addr) // closed by t.Cleanup
//				nodes[i] = mynode.Node(client)
//			}
//			return redlock.NewNodes(nodes, opts...)
//		})
//	}
package redlocktest

import (
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// A Connect returns a new Client with opts over the nodes at addrs, one address a node: a
// redis-server's, or under RunCluster a master of the node's cluster (a cluster client finds
// the rest). Each call makes clients of its own, as another process would have, and registers
// their closing with t.Cleanup; the table closes the Client itself. Connect builds its Client
// with redlock.NewNodes, or redlock.New for go-redis clients.
type Connect func(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error)

// Run runs the conformance table on Clients that connect makes over three redis-server
// processes, started for the table (some cases start servers of their own) and stopped when t
// ends.
func Run(t *testing.T, connect Connect) {
	t.Helper()
	run(t, newSuite(t, connect, startServers, false))
}

// RunCluster runs the conformance table where each of the three nodes is a Redis Cluster of
// one master, so that every command goes through the node's cluster client. The servers'
// READONLY case is left out: a cluster node cannot be made a replica of a plain server.
func RunCluster(t *testing.T, connect Connect) {
	t.Helper()
	run(t, newSuite(t, connect, startClusters, true))
}

// A suite is the table's input: how to reach nodes, and the nodes it runs on.
type suite struct {
	connect Connect
	cluster bool
	// shared are the nodes of the cases that need no servers of their own; their servers
	// allow DEBUG (for DEBUG SLEEP) from loopback.
	shared nodes
	// denied are two nodes whose ACL refuses SET and scripts (NOPERM); wrong two nodes whose
	// EVALSHA is MGET, which answers a script with an array of nils.
	denied, wrong []*redistest.Server
}

// nodes are three running nodes.
type nodes struct {
	addrs   []string
	servers []*redistest.Server // the process of each node (a cluster's one master)
	raw     []*redis.Client     // a plain client of each, for the table's own checks
}

// The redis-server options of the suite's nodes.
var (
	debugArgs  = []string{"--enable-debug-command", "local"}
	deniedArgs = []string{"--user", "default", "on", "nopass", "~*", "&*", "+@all", "-set", "-evalsha", "-eval"}
	wrongArgs  = []string{"--rename-command", "EVALSHA", "EVALSHA_REAL", "--rename-command", "MGET", "EVALSHA"}
)

// A starter starts a node for each set of redis-server options, stopped when t ends.
type starter func(t *testing.T, args ...[]string) []*redistest.Server

func newSuite(t *testing.T, connect Connect, start starter, cluster bool) suite {
	t.Helper()
	ss := start(t, debugArgs, debugArgs, debugArgs, deniedArgs, deniedArgs, wrongArgs, wrongArgs)
	return suite{connect: connect, cluster: cluster, shared: nodesOf(t, ss[:3]), denied: ss[3:5], wrong: ss[5:7]}
}

func startServers(t *testing.T, args ...[]string) []*redistest.Server {
	t.Helper()
	ss := make([]*redistest.Server, len(args))
	for i, a := range args {
		ss[i] = redistest.Start(t, a...)
	}
	return ss
}

// startClusters starts clusters of one master all at once: a cluster master serves only some
// 2 s after it started.
func startClusters(t *testing.T, args ...[]string) []*redistest.Server {
	t.Helper()
	redistest.Require(t)
	dir := t.TempDir()
	cls := make([]*redistest.Cluster, len(args))
	errs := make([]error, len(args))
	var wg sync.WaitGroup
	for i := range cls {
		wg.Go(func() { cls[i], errs[i] = redistest.LaunchCluster(dir, 1, args[i]...) })
	}
	wg.Wait()
	ss := make([]*redistest.Server, len(args))
	for i, cl := range cls {
		if cl != nil {
			t.Cleanup(cl.Kill)
		}
		if errs[i] == nil {
			ss[i] = cl.Masters[0]
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redlocktest: start the clusters: %v", err)
	}
	return ss
}

func nodesOf(t *testing.T, ss []*redistest.Server) nodes {
	n := nodes{addrs: redistest.Addrs(ss), servers: ss}
	for _, s := range ss {
		n.raw = append(n.raw, redistest.Client(t, s.Addr))
	}
	return n
}

func run(t *testing.T, s suite) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}
