package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
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
	placed, err := keyslot.Votes(ctx, cluster, votes)
	if err != nil {
		return nil, fmt.Errorf("redlock: place %d votes on the cluster: %w", votes, err)
	}
	whole := newGoredisNode(cluster, o.nodeTimeout)
	nodes := make([]Node, votes)
	for i, v := range placed {
		nodes[i] = &vote{Node: whole, at: len(o.names.Prefix()), tag: "{" + v.Tag + "}", master: v.Master}
	}
	c := newClient(nodes, o)
	c.listen = []Node{whole}
	c.listener = newListener(c)
	return c, nil
}

// A vote is one of NewCluster's nodes: the cluster, with every key put in the vote's slot by
// its tag, right after the prefix (at).
type vote struct {
	Node
	at     int
	tag    string // "{" + tag + "}"
	master string
}

func (v *vote) String() string { return "vote " + v.tag + " on " + v.master }

// in returns key with the vote's tag after the prefix.
func (v *vote) in(key string) string { return key[:v.at] + v.tag + key[v.at:] }

func (v *vote) Eval(ctx context.Context, script Script, keys, args []string) (any, error) {
	tagged := make([]string, len(keys))
	for i, k := range keys {
		tagged[i] = v.in(k)
	}
	return v.Node.Eval(ctx, script, tagged, args)
}

func (v *vote) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return v.Node.SetNX(ctx, v.in(key), value, ttl)
}
