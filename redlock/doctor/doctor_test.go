package doctor_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/redistest/delayproxy"
	"github.com/quorumlock/redlock/redlock/doctor"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// checkup runs Check for d over the servers at addrs, each through a go-redis client of its
// own, with set's node timeout and prefix, the node timeout 2 s by default: one that a busy
// machine keeps, so that only the checks of latency find it slow.
func checkup(t *testing.T, d time.Duration, addrs []string, set ...doctor.Setup) doctor.Checkup {
	t.Helper()
	return checkNodes(t, d, redistest.Clients(t, addrs...), set...)
}

// checkNodes runs Check for d over goredisnode's nodes of clients, as checkup.
func checkNodes(t *testing.T, d time.Duration, clients []redis.UniversalClient, set ...doctor.Setup) doctor.Checkup {
	t.Helper()
	s := doctor.Setup{NodeTimeout: 2 * time.Second}
	for _, o := range set {
		if o.NodeTimeout != 0 {
			s.NodeTimeout = o.NodeTimeout
		}
		s.KeyPrefix = o.KeyPrefix
	}
	for _, c := range clients {
		s.Nodes = append(s.Nodes, goredisnode.New(c))
	}
	up, err := doctor.Check(deadline(t), s, d)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return up
}

// deadline is a context that fails a test that hangs in seconds, not at the package timeout.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// expect fails t unless up has the finding of check on node (-1: the whole set) with verdict v
// and every one of words in its detail.
func expect(t *testing.T, up doctor.Checkup, node int, check string, v doctor.Verdict, words ...string) {
	t.Helper()
	f := finding(t, up, node, check)
	if f.Verdict != v {
		t.Errorf("node %d %s: %s, want %s: %s", node, check, f.Verdict, v, f.Detail)
		return
	}
	for _, w := range words {
		if !strings.Contains(f.Detail, w) {
			t.Errorf("node %d %s (%s): %q does not say %q", node, check, f.Verdict, f.Detail, w)
		}
	}
}

// finding returns the finding of check on node (-1: the whole set), failing t without one.
func finding(t *testing.T, up doctor.Checkup, node int, check string) doctor.Finding {
	t.Helper()
	for _, f := range up.Findings {
		if f.Node == node && f.Check == check {
			return f
		}
	}
	t.Fatalf("no finding of %s on node %d among %v", check, node, up.Findings)
	return doctor.Finding{}
}

// port returns the port of a host:port address.
func port(t testing.TB, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A healthy deployment, as docs/locks.md asks for: five masters with AOF and appendfsync always,
// sampled for 2 s, fails no check; every node passes those that do not depend on the machine's
// load, and the whole set passes quorum.
func TestCheckHealthy(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 5, "--appendonly", "yes", "--appendfsync", "always")
	up := checkup(t, 2*time.Second, redistest.Addrs(ss))
	if up.Verdict == doctor.Fail {
		t.Errorf("a healthy deployment failed: %s\n%v", up.Summary(), up.Findings)
	}
	for i := range ss {
		expect(t, up, i, "role", doctor.OK, "a master without replicas")
		expect(t, up, i, "write", doctor.OK, "takes a write")
		expect(t, up, i, "identity", doctor.OK, "run_id")
		expect(t, up, i, "persistence", doctor.OK, "appendfsync always")
		expect(t, up, i, "eviction", doctor.OK, "no maxmemory")
		expect(t, up, i, "commands", doctor.OK, "EVALSHA")
		expect(t, up, i, "acl", doctor.OK, "user default")
	}
	expect(t, up, -1, "quorum", doctor.OK, "5 of 5 nodes answered, quorum 3")
	if got := len(up.Findings); got != 5*9+1 {
		t.Errorf("%d findings, want 9 a node and the quorum's: %v", got, up.Findings)
	}
}

// A replica of a node given fails as not independent of it, and one of a server not given as
// one that never votes; their masters are warned of failovers.
func TestCheckRole(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 4)
	r0 := redistest.Start(t, "--replicaof", "127.0.0.1", port(t, ss[0].Addr))
	out := redistest.Start(t, "--replicaof", "127.0.0.1", port(t, ss[3].Addr))
	up := checkup(t, 200*time.Millisecond, []string{ss[0].Addr, ss[1].Addr, ss[2].Addr, r0.Addr, out.Addr})
	expect(t, up, 3, "role", doctor.Fail, "a replica of node 0 ("+ss[0].Addr+")", "READONLY", "no independent vote")
	expect(t, up, 4, "role", doctor.Fail, "a replica of "+ss[3].Addr, "READONLY", "never votes")
	expect(t, up, 0, "role", doctor.Warn, "a master with 1 replica", "longest ttl")
	expect(t, up, 1, "role", doctor.OK, "a master without replicas")
	expect(t, up, 3, "write", doctor.Fail, "refuses writes (READONLY You can't write against a read only replica)")
	expect(t, up, -1, "quorum", doctor.Warn, "3 of the 5 nodes that answered count as votes (node 3 refuses writes (READONLY); "+
		"node 4 refuses writes (READONLY))", "locks survive 0 failures, not 2")
}

// A writable replica (replica-read-only no) takes the lock's writes and votes, but a resync from
// its master wipes its keys, as it does here: it fails role as no independent vote, with those
// words, and the quorum line counts it as none and says why; one of a master not given, alike.
func TestCheckWritableReplica(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3, "--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0")
	r0 := redistest.Start(t, "--replicaof", "127.0.0.1", port(t, ss[0].Addr), "--replica-read-only", "no")
	other := redistest.Start(t)
	out := redistest.Start(t, "--replicaof", "127.0.0.1", port(t, other.Addr), "--replica-read-only", "no")
	up := checkup(t, 200*time.Millisecond, []string{ss[0].Addr, ss[1].Addr, ss[2].Addr, r0.Addr, out.Addr})
	expect(t, up, 3, "role", doctor.Fail, "a writable replica of node 0 ("+ss[0].Addr+"), replica-read-only no: it takes the "+
		"lock's writes and votes, but a resync from node 0 wipes the lock keys it holds", "counts as no vote")
	expect(t, up, 4, "role", doctor.Fail, "a writable replica of "+other.Addr, "votes, but a resync from its master wipes", "counts as no vote")
	expect(t, up, 3, "write", doctor.OK, "takes a write")
	expect(t, up, -1, "quorum", doctor.Warn, "3 of the 5 nodes that answered count as votes (node 3 votes, but is a writable "+
		"replica: a resync from its master wipes its keys; node 4 votes, but is a writable replica: ", "locks survive 0 failures, not 2")

	// The words hold: a key written on the replica is gone after a full resync from node 0.
	ctx, master, replica := deadline(t), redistest.Client(t, ss[0].Addr), redistest.Client(t, r0.Addr)
	redistest.Eventually(t, "the replica is in sync", func() bool {
		info, _ := replica.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	if err := replica.Set(ctx, "deploy", "token", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := master.Do(ctx, "DEBUG", "CHANGE-REPL-ID").Err(); err != nil { // the next sync is a full one
		t.Fatal(err)
	}
	if err := replica.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the resync wipes the replica's key", func() bool { return replica.Exists(ctx, "deploy").Val() == 0 })
}

// One server given twice, under 127.0.0.1 and localhost, fails on its second appearance.
func TestCheckIdentity(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 2)
	twice := net.JoinHostPort("localhost", port(t, ss[0].Addr))
	up := checkup(t, 200*time.Millisecond, []string{ss[0].Addr, ss[1].Addr, twice})
	expect(t, up, 2, "identity", doctor.Fail, "the same server as node 0 ("+ss[0].Addr+")", "counts twice")
	expect(t, up, 0, "identity", doctor.OK, "no other node's")
	expect(t, up, 1, "identity", doctor.OK, "no other node's")
	expect(t, up, -1, "quorum", doctor.Warn, "2 of the 3 nodes that answered count as votes (node 2 is node 0 again)")
}

// No AOF and AOF with everysec are warned of, naming the rule of docs/locks.md; AOF with
// always passes.
func TestCheckPersistence(t *testing.T) {
	t.Parallel()
	none := redistest.Start(t)
	everysec := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "everysec")
	always := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	up := checkup(t, 200*time.Millisecond, []string{none.Addr, everysec.Addr, always.Addr})
	expect(t, up, 0, "persistence", doctor.Warn, "no AOF", "restart it only after the longest ttl in use (docs/locks.md)")
	expect(t, up, 1, "persistence", doctor.Warn, "appendfsync everysec", "restart it only after the longest ttl in use")
	expect(t, up, 2, "persistence", doctor.OK, "appendfsync always")
}

// maxmemory with allkeys-lru or volatile-lru fails: a lock key can be evicted; with noeviction,
// or without maxmemory, it passes.
func TestCheckEviction(t *testing.T) {
	t.Parallel()
	allkeys := redistest.Start(t, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	volatile := redistest.Start(t, "--maxmemory", "10mb", "--maxmemory-policy", "volatile-lru")
	noeviction := redistest.Start(t, "--maxmemory", "10mb", "--maxmemory-policy", "noeviction")
	unlimited := redistest.Start(t)
	up := checkup(t, 200*time.Millisecond, redistest.Addrs([]*redistest.Server{allkeys, volatile, noeviction, unlimited}))
	expect(t, up, 0, "eviction", doctor.Fail, "maxmemory 10.00M with allkeys-lru", "lock keys too", "noeviction")
	expect(t, up, 1, "eviction", doctor.Fail, "maxmemory 10.00M with volatile-lru", "lock keys have a ttl", "noeviction")
	expect(t, up, 2, "eviction", doctor.OK, "with noeviction")
	expect(t, up, 3, "eviction", doctor.OK, "no maxmemory")
	expect(t, up, -1, "quorum", doctor.Warn, "4 nodes", "use an odd number")
}

// A node whose clock runs 5 % fast fails, beyond the drift factor; one an hour ahead is warned
// of, as the one fencing's median outvotes; the healthy ones pass, neither fast nor far off.
// Sampled for 2 s, so that a busy machine's round trips leave a margin under 4 %.
func TestCheckClock(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	fast, ahead := redistest.StartRate(t, 1.05), redistest.StartOffset(t, time.Hour)
	up := checkup(t, 2*time.Second, []string{ss[0].Addr, fast.Addr, ss[1].Addr, ahead.Addr, ss[2].Addr})
	expect(t, up, 1, "clock", doctor.Fail, "% fast (±", "beyond the drift factor 1.00%", "expires lock keys early")
	expect(t, up, 3, "clock", doctor.Warn, "its clock is 1h0m0s ahead of the median", "fencing", "but not two: set its time right")
	for _, i := range []int{0, 2, 4} { // never blamed; under load, maybe warned that the margin is too wide
		if f := finding(t, up, i, "clock"); f.Verdict == doctor.Fail || strings.Contains(f.Detail, "median") {
			t.Errorf("healthy node %d clock: %s: %s", i, f.Verdict, f.Detail)
		}
	}
}

// A node behind a delay proxy whose round trip is more than half the node timeout is warned
// of (or failed, if the machine's load adds the rest); one whose round trip is more than the
// node timeout fails. The proxies' delays are floors, which no load lowers. (Sampled for 2 s,
// so that the slower node's first PING, behind the go-redis connection's set-up of 3 round
// trips, comes within the time Check waits for it.)
func TestCheckLatency(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	slow, err := delayproxy.StartDelay(ss[1].Addr, 60*time.Millisecond) // 120 ms a round trip
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slow.Close)
	slower, err := delayproxy.StartDelay(ss[2].Addr, 110*time.Millisecond) // 220 ms
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slower.Close)
	up := checkup(t, 2*time.Second, []string{ss[0].Addr, slow.Addr(), slower.Addr()}, doctor.Setup{NodeTimeout: 200 * time.Millisecond})
	if f := finding(t, up, 1, "latency"); f.Verdict == doctor.OK || !strings.Contains(f.Detail, "node timeout 200ms") {
		t.Errorf("node 1 latency: %s, want a warning or a failure: %s", f.Verdict, f.Detail)
	}
	expect(t, up, 2, "latency", doctor.Fail, "more than the node timeout 200ms", "counts such calls as failed")
	finding(t, up, 0, "latency")
}

// A renamed EVALSHA fails; an ACL user without the prefix's channels fails, naming them.
func TestCheckCommandsAndACL(t *testing.T) {
	t.Parallel()
	renamed := redistest.Start(t, "--rename-command", "EVALSHA", "")
	full := redistest.StartRestricted(t, "app", "s3cret", "app:*", "app:*")
	keysOnly := redistest.StartRestricted(t, "app", "s3cret", "app:*", "other:*")
	nodes := []redis.UniversalClient{redistest.Client(t, renamed.Addr),
		redistest.ACLClient(t, full.Addr, "app", "s3cret"), redistest.ACLClient(t, keysOnly.Addr, "app", "s3cret")}
	up := checkNodes(t, 200*time.Millisecond, nodes, doctor.Setup{KeyPrefix: "app:"})
	expect(t, up, 0, "commands", doctor.Fail, "renamed or missing: EVALSHA:", "rename-command")
	expect(t, up, 0, "write", doctor.Fail, "the write failed (ERR unknown command 'evalsha'", "counts as no vote")
	expect(t, up, 0, "acl", doctor.OK, "user default may run") // every command but the one renamed away
	expect(t, up, 1, "commands", doctor.OK, "EVALSHA, EVAL, SET, PUBLISH, SUBSCRIBE, TIME")
	expect(t, up, 1, "acl", doctor.OK, `user app may run every command the library sends on each kind of key (17) and channel (2) it touches, all "app:*"`)
	expect(t, up, 2, "acl", doctor.Fail, "user app is refused PUBLISH, SUBSCRIBE", "'app:~redlock:released", "channel", "&app:*")
}

// Nodes that do not answer get a reach failure each, the others are checked all the same, and
// the quorum fails when too few answered; with none answering, Check fails too.
func TestCheckReachAndQuorum(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 5)
	ss[0].Kill()
	ss[3].Kill()
	ss[4].Pause(t)
	up := checkup(t, time.Second, redistest.Addrs(ss), doctor.Setup{NodeTimeout: 500 * time.Millisecond})
	expect(t, up, 0, "reach", doctor.Fail, "no answer")
	expect(t, up, 3, "reach", doctor.Fail, "no answer")
	expect(t, up, 4, "reach", doctor.Fail, "no answer", "no reply within 1s")
	expect(t, up, 1, "role", doctor.OK)
	expect(t, up, 2, "role", doctor.OK)
	expect(t, up, -1, "quorum", doctor.Fail, "2 of 5 nodes answered, fewer than a quorum (3)")
	for _, f := range up.Findings {
		if (f.Node == 0 || f.Node == 3 || f.Node == 4) && f.Check != "reach" {
			t.Errorf("a node that did not answer has a finding of %s: %v", f.Check, f)
		}
	}
	// The summary names the failures (and on a machine busy enough, latency beside them).
	if sum := up.Summary(); !strings.Contains(sum, " of 22 checks failed (node 0 reach, ") || !strings.Contains(sum, "node 3 reach, node 4 reach, quorum)") {
		t.Errorf("summary %q", sum)
	}

	var down []driver.Node
	for _, c := range redistest.Clients(t, ss[0].Addr, ss[3].Addr) {
		down = append(down, goredisnode.New(c))
	}
	up, err := doctor.Check(deadline(t), doctor.Setup{Nodes: down}, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "redlock: no node answered") || up.Findings[0].Check != "reach" || up.Findings[1].Check != "reach" {
		t.Errorf("Check with no node answering = %v, %v", up.Findings, err)
	}
}

// Bad input is refused, before anything is sent.
func TestCheckInput(t *testing.T) {
	nodes := []driver.Node{goredisnode.New(redistest.MiniClients(t, redistest.Minis(t, 1))[0])}
	for _, c := range []struct {
		name  string
		setup doctor.Setup
		d     time.Duration
		want  string
	}{
		{"for 0", doctor.Setup{Nodes: nodes}, 0, "want a positive duration"},
		{"no nodes", doctor.Setup{}, time.Second, "redlock: no nodes"},
		{"a nil node", doctor.Setup{Nodes: []driver.Node{nil}}, time.Second, "redlock: node 0 is nil"},
		{"a bad prefix", doctor.Setup{Nodes: nodes, KeyPrefix: "{app"}, time.Second, "hash tag"},
	} {
		if _, err := doctor.Check(context.Background(), c.setup, c.d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
