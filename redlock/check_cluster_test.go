package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
)

// With NewCluster, each vote's slot is served where the Client placed it, and the cluster
// serves every slot; once a vote's slot moves to another vote's master, the vote is warned of.
// A whole cluster given to New as one node is checked only as far as its scripts allow.
func TestCheckCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := deadline(t)
	c, err := redlock.NewCluster(ctx, cl.Client(t), 3, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up, err := c.Check(ctx, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		expect(t, up, i, "identity", redlock.OK, "as when the Client placed it")
		expect(t, up, i, "role", redlock.OK, "a master without replicas")
	}
	expect(t, up, -1, "identity", redlock.OK, "the cluster serves all 16384 slots")

	// The vote's name, "vote {tag} on master", gives its tag and master.
	tag, master := voteOf(t, up, 0)
	_, other := voteOf(t, up, 1)
	cl.Migrate(t, tag, serverAt(t, cl, other), func() {})
	up, err = c.Check(ctx, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 0, "identity", redlock.Warn, "its slot is served by "+other+" now, not by "+master, "one topology")

	whole, err := redlock.New([]redis.UniversalClient{cl.Client(t)}, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	up, err = whole.Check(ctx, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 0, "role", redlock.Warn, "not checked: its client sends commands to no one server")
	if f := finding(t, up, 0, "clock"); f.Verdict == redlock.Fail || !strings.Contains(f.Detail, "against this machine's monotonic clock") {
		t.Errorf("the cluster's clock: %s: %s", f.Verdict, f.Detail)
	}
	finding(t, up, 0, "latency")
}

// voteOf returns the tag and master of vote i, from its name in the checkup.
func voteOf(t *testing.T, up redlock.Checkup, i int) (tag, master string) {
	t.Helper()
	for _, f := range up.Findings {
		if f.Node == i {
			var ok bool
			tag, master, ok = strings.Cut(strings.TrimPrefix(f.Addr, "vote "), " on ")
			if ok {
				return tag, master
			}
		}
	}
	t.Fatalf("no vote %d in %v", i, up.Findings)
	return "", ""
}

func serverAt(t *testing.T, cl *redistest.Cluster, addr string) *redistest.Server {
	t.Helper()
	for _, s := range cl.Masters {
		if s.Addr == addr {
			return s
		}
	}
	t.Fatalf("no master at %s", addr)
	return nil
}

// scriptsOnly is a Node over a go-redis client that is no Commander: it runs scripts only.
type scriptsOnly struct{ c *redis.Client }

func (n scriptsOnly) Eval(ctx context.Context, s driver.Script, keys, args []string) (any, error) {
	v, err := n.c.EvalSha(ctx, s.SHA1(), keys, args).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = n.c.Eval(ctx, s.Source(), keys, args).Result()
	}
	return v, err
}

func (n scriptsOnly) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.c.SetNX(ctx, key, value, ttl).Result()
}

func (n scriptsOnly) Listen(ctx context.Context, _ []string, _ func(), _ func(string, string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// A node that is no Commander is warned of for every check that needs its commands, and
// checked for write, clock and latency through scripts.
func TestCheckScriptsOnly(t *testing.T) {
	t.Parallel()
	ms := redistest.Minis(t, 3)
	nodes := make([]driver.Node, len(ms))
	for i, c := range redistest.MiniClients(t, ms) {
		nodes[i] = scriptsOnly{c.(*redis.Client)}
	}
	c, err := redlock.NewNodes(nodes, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up, err := c.Check(deadline(t), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		for _, check := range []string{"role", "identity", "persistence", "eviction", "commands", "acl"} {
			expect(t, up, i, check, redlock.Warn, "not checked: its client runs scripts only (it is no redlock.Commander)")
		}
		// Measured: an ok, or under load a warning that the sampling was too short to tell.
		if f := finding(t, up, i, "clock"); f.Verdict == redlock.Fail || !strings.Contains(f.Detail, "against this machine's monotonic clock") {
			t.Errorf("node %d clock: %s: %s", i, f.Verdict, f.Detail)
		}
		if f := finding(t, up, i, "latency"); !strings.Contains(f.Detail, "p99 round trip") {
			t.Errorf("node %d latency not measured: %s", i, f.Detail)
		}
		expect(t, up, i, "write", redlock.OK, "takes a write") // through a script
	}
	expect(t, up, -1, "quorum", redlock.OK, "3 of 3 nodes answered")
	ms[1].Close()
	up, err = c.Check(deadline(t), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 1, "reach", redlock.Fail, "no answer")
}
