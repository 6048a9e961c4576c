package doctor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock/doctor"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// With NewCluster, each vote's slot is served where the Client placed it, and the cluster
// serves every slot; once a vote's slot moves to another vote's master, the vote is warned of.
// A whole cluster given to New as one node is checked only as far as its scripts allow.
func TestCheckCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := deadline(t)
	votes, err := goredisnode.Votes(ctx, cl.Client(t), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	setup := doctor.Setup{Nodes: votes, NodeTimeout: 2 * time.Second}
	up, err := doctor.Check(ctx, setup, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		expect(t, up, i, "identity", doctor.OK, "as when the Client placed it")
		expect(t, up, i, "role", doctor.OK, "a master without replicas")
	}
	expect(t, up, -1, "identity", doctor.OK, "the cluster serves all 16384 slots")

	// The vote's name, "vote {tag} on master", gives its tag and master.
	tag, master := voteOf(t, up, 0)
	_, other := voteOf(t, up, 1)
	cl.Migrate(t, tag, serverAt(t, cl, other), func() {})
	up, err = doctor.Check(ctx, setup, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 0, "identity", doctor.Warn, "its slot is served by "+other+" now, not by "+master, "one topology")

	up, err = doctor.Check(ctx, doctor.Setup{Nodes: []driver.Node{goredisnode.New(cl.Client(t))}, NodeTimeout: 2 * time.Second},
		200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 0, "role", doctor.Warn, "not checked: its client sends commands to no one server")
	if f := finding(t, up, 0, "clock"); f.Verdict == doctor.Fail || !strings.Contains(f.Detail, "against this machine's monotonic clock") {
		t.Errorf("the cluster's clock: %s: %s", f.Verdict, f.Detail)
	}
	finding(t, up, 0, "latency")
}

// voteOf returns the tag and master of vote i, from its name in the checkup.
func voteOf(t *testing.T, up doctor.Checkup, i int) (tag, master string) {
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
	setup := doctor.Setup{Nodes: nodes, NodeTimeout: 2 * time.Second}
	up, err := doctor.Check(deadline(t), setup, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		for _, check := range []string{"role", "identity", "persistence", "eviction", "commands", "acl"} {
			expect(t, up, i, check, doctor.Warn, "not checked: its client runs scripts only (it is no doctor.Commander)")
		}
		// Measured: an ok, or under load a warning that the sampling was too short to tell.
		if f := finding(t, up, i, "clock"); f.Verdict == doctor.Fail || !strings.Contains(f.Detail, "against this machine's monotonic clock") {
			t.Errorf("node %d clock: %s: %s", i, f.Verdict, f.Detail)
		}
		if f := finding(t, up, i, "latency"); !strings.Contains(f.Detail, "p99 round trip") {
			t.Errorf("node %d latency not measured: %s", i, f.Detail)
		}
		expect(t, up, i, "write", doctor.OK, "takes a write") // through a script
	}
	expect(t, up, -1, "quorum", doctor.OK, "3 of 3 nodes answered")
	ms[1].Close()
	up, err = doctor.Check(deadline(t), setup, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, up, 1, "reach", doctor.Fail, "no answer")
}
