package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// NewCluster returns a Client whose votes nodes are independent keys on distinct masters of one
// Redis Cluster: a lock is acquired when it holds a majority of the votes. Each vote is a hash
// tag; every key of a lock on that vote has it right after the prefix (prefix + "{tag}" + the
// key, and likewise its companions), so that the vote lives in one slot, which a different master served when
// NewCluster read the topology (CLUSTER SLOTS). The tags are the first of "0", "1", ..., "z",
// "10", ... (base 36) whose slots fall on masters not used yet, so every Client made on one
// topology uses the same keys.
//
// Safety rests on the votes being distinct keys that every Client of a lock agrees on; their
// masters being distinct is what buys fault tolerance. After a resharding or a failover two
// votes may share a master, which costs fault tolerance, not safety. But a Client made after a
// resharding that moved a vote's slot may pick another tag for that vote (one at most), and two
// Clients that disagree on a vote do not exclude each other reliably: make every Client of a
// lock from one topology (redlock status shows the tags). A failover that loses acknowledged
// writes is a node restarting without its data, which the Redlock guarantee excludes. With
// Redis's default cluster-require-full-coverage yes, one master down makes every master refuse
// service, which takes all votes at once: set it to no for the fault tolerance of the votes.
//
// NewCluster fails on a nil cluster, votes < 1, an option out of range, a prefix with a hash
// tag (it would put every vote in one slot), a cluster it cannot read within ctx, and fewer
// masters than votes. Everything else works as with New; Close does
// not close cluster.
func NewCluster(ctx context.Context, cluster *redis.ClusterClient, votes int, opts ...Option) (*Client, error) {
	if cluster == nil {
		return nil, errors.New("redlock: nil cluster client")
	}
	if votes < 1 {
		return nil, fmt.Errorf("redlock: %d votes: want at least 1", votes)
	}
	o, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.names.Tagged() {
		return nil, fmt.Errorf("redlock: key prefix %q holds a hash tag, which would put every vote in one slot", o.names.Prefix())
	}
	nodes, err := goredisnode.Votes(ctx, cluster, votes, len(o.names.Prefix()))
	if err != nil {
		return nil, fmt.Errorf("redlock: place %d votes on the cluster: %w", votes, err)
	}
	for i, n := range nodes {
		nodes[i] = n.(driver.Tuned).ForClient(o.nodeTimeout)
	}
	c := newClient(nodes, o)
	c.listener = newListener(c, []driver.Node{goredisnode.New(cluster).(driver.Tuned).ForClient(o.nodeTimeout)})
	return c, nil
}
