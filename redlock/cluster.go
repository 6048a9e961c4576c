package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// NewCluster returns a Client whose votes nodes are independent keys on distinct masters of one
// Redis Cluster: a lock is acquired when it holds a majority of the votes. Each vote is a hash
// tag; every key of a lock on that vote starts with it ("{tag}" + the key, and likewise its
// companions), so that the vote lives in one slot, which a different master served when
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
// NewCluster fails on a nil cluster, votes < 1, an option out of range, a cluster it cannot
// read within ctx, and fewer masters than votes. Everything else works as with New; Close does
// not close cluster.
func NewCluster(ctx context.Context, cluster *redis.ClusterClient, votes int, opts ...Option) (*Client, error) {
	if cluster == nil {
		return nil, errors.New("redlock: nil cluster client")
	}
	if votes < 1 {
		return nil, fmt.Errorf("redlock: %d votes: want at least 1", votes)
	}
	c, err := newClient(votes, opts)
	if err != nil {
		return nil, err
	}
	placed, err := keyslot.Votes(ctx, cluster, votes)
	if err != nil {
		return nil, fmt.Errorf("redlock: place %d votes on the cluster: %w", votes, err)
	}
	for i, v := range placed {
		c.nodes[i] = &vote{cluster: cluster, tag: "{" + v.Tag + "}"}
		c.addrs[i] = v.Master
	}
	c.listen = []conn{cluster}
	c.tagged = true
	return c, nil
}

// A vote is one of NewCluster's nodes: the cluster, with every key put in the vote's slot.
type vote struct {
	cluster *redis.ClusterClient
	tag     string // "{" + tag + "}"
}

var _ conn = (*vote)(nil)

// in returns keys with the vote's tag before each.
func (v *vote) in(keys []string) []string {
	tagged := make([]string, len(keys))
	for i, k := range keys {
		tagged[i] = v.tag + k
	}
	return tagged
}

func (v *vote) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return v.cluster.Eval(ctx, script, v.in(keys), args...)
}

func (v *vote) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return v.cluster.EvalSha(ctx, sha1, v.in(keys), args...)
}

func (v *vote) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return v.cluster.EvalRO(ctx, script, v.in(keys), args...)
}

func (v *vote) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return v.cluster.EvalShaRO(ctx, sha1, v.in(keys), args...)
}

func (v *vote) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return v.cluster.ScriptExists(ctx, hashes...)
}

func (v *vote) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return v.cluster.ScriptLoad(ctx, script)
}

// Process sends cmd with the vote's tag before every key: the key of SET, the keys of EVAL and
// EVALSHA, the only commands the Client sends with Process.
func (v *vote) Process(ctx context.Context, cmd redis.Cmder) error {
	args := slices.Clone(cmd.Args())
	first, n := 1, 1 // SET key ...
	if name := args[0]; name == "evalsha" || name == "eval" {
		first, n = 3, args[2].(int) // EVALSHA sha numkeys key ...
	}
	for i := first; i < first+n; i++ {
		args[i] = v.tag + args[i].(string)
	}
	tagged := newLike(ctx, cmd, args)
	err := v.cluster.Process(ctx, tagged)
	copyReply(cmd, tagged)
	return err
}

func (v *vote) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return v.cluster.Subscribe(ctx, channels...)
}
