package goredisnode

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/redlock/driver"
)

// Votes places n votes on distinct masters of cluster, as it serves its slots now (CLUSTER
// SHARDS), and returns them as nodes, for redlock.NewCluster: each is an independent key
// space of the cluster, every key of which starts, after the first prefixLen bytes (the key
// prefix), with the vote's hash tag, so that it lives in the vote's slot. The tags are the
// first of "0", "1", ..., "z", "10", ... (base 36) whose slots fall on masters not used yet, so
// every caller reading one topology gets the same votes. A vote has a Slot method that says its
// tag and the master that served its slot when it was placed, and a Command method that sends a
// command to the master serving its slot now.
func Votes(ctx context.Context, cluster *redis.ClusterClient, n, prefixLen int) ([]driver.Node, error) {
	placed, err := keyslot.Votes(ctx, cluster, n)
	if err != nil {
		return nil, err
	}
	whole := New(cluster).(*goredisNode)
	votes := make([]driver.Node, len(placed))
	for i, v := range placed {
		votes[i] = &vote{whole: whole, at: prefixLen, tag: "{" + v.Tag + "}", master: v.Master}
	}
	return votes, nil
}

// A vote is one of the nodes of Votes: the cluster, with every key put in the vote's slot by
// its tag, right after the prefix (at).
type vote struct {
	whole  *goredisNode
	at     int
	tag    string // "{" + tag + "}"
	master string
}

var (
	_ driver.Tuned     = (*vote)(nil)
	_ driver.Clustered = (*vote)(nil)
)

func (v *vote) String() string { return "vote " + v.tag + " on " + v.master }

// Clustered reports true: a vote is a key of a Redis Cluster.
func (*vote) Clustered() bool { return true }

// Slot returns the vote's hash tag, braces included, and the master that served its slot when
// Votes placed it.
func (v *vote) Slot() (tag, master string) { return v.tag, v.master }

// ForClient returns the vote over the cluster as a Client whose node timeout is timeout uses it.
func (v *vote) ForClient(timeout time.Duration) driver.Node {
	w := *v
	w.whole = v.whole.ForClient(timeout).(*goredisNode)
	return &w
}

// in returns key with the vote's tag after the prefix.
func (v *vote) in(key string) string { return key[:v.at] + v.tag + key[v.at:] }

func (v *vote) Eval(ctx context.Context, script driver.Script, keys, args []string) (any, error) {
	tagged := make([]string, len(keys))
	for i, k := range keys {
		tagged[i] = v.in(k)
	}
	return v.whole.Eval(ctx, script, tagged, args)
}

func (v *vote) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return v.whole.SetNX(ctx, v.in(key), value, ttl)
}

// Listen listens to the whole cluster, which hears what every master publishes.
func (v *vote) Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	return v.whole.Listen(ctx, channels, ready, deliver)
}

// Command sends args once to the master that serves the vote's slot.
func (v *vote) Command(ctx context.Context, args ...string) (any, error) {
	return v.whole.command(ctx, v.tag, args)
}
