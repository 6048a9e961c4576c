package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// withUser lets user log in with password on every master of cl, beside the default user that
// the test's own clients use.
func withUser(t *testing.T, cl *redistest.Cluster) {
	t.Helper()
	for _, m := range cl.Masters {
		c := redistest.Client(t, m.Addr)
		if err := c.Do(context.Background(), "ACL", "SETUSER", user, "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Nodes that are whole clusters, beside a plain server, in --nodes: exec and status work on a
// key with a hash tag, and no password shows.
func TestExecAndStatusOnClusterNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := redistest.StartCluster(t, 1), redistest.StartCluster(t, 2)
	withUser(t, a)
	withUser(t, b)
	plain := redistest.StartACL(t, user, password)
	nodes := strings.Join([]string{
		fmt.Sprintf("redis+cluster://%s:%s@%s", user, password, a.Masters[0].Addr),
		fmt.Sprintf("redis+cluster://%s:%s@%s?addr=%s", user, password, b.Masters[0].Addr, b.Masters[1].Addr),
		fmt.Sprintf("redis://%s:%s@%s", user, password, plain.Addr),
	}, ",")
	env := []string{"REDLOCK_NODES=" + nodes}
	const key = "{user:7}:profile"

	code, stdout, stderr := runCmd(t, env, "exec", "--key", key, "--fence", "--verbose", "--", "sh", "-c", `echo "fence $REDLOCK_FENCE"`)
	if code != 0 || !strings.HasPrefix(stdout, "fence ") || !strings.Contains(stderr, "released") {
		t.Fatalf("exec: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	noPassword(t, stdout, stderr)

	// A generous node timeout: a cluster client's first call loads its slots, which on a busy
	// machine can take longer than the default 100 ms.
	locker, err := redlock.New([]redis.UniversalClient{a.Client(t), b.Client(t), redistest.ACLClient(t, plain.Addr, user, password)}, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	l, err := locker.TryLock(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// TryLock returns at a quorum; the third node's SET may land a moment later.
	redistest.Eventually(t, "status shows the key held on 3/3 nodes", func() bool {
		code, stdout, stderr = runCmd(t, env, "status", "--key", key)
		return code == 0 && strings.Contains(stdout, "verdict: held on a quorum (3/3 nodes) by "+l.Token()[:8])
	})
	if !strings.Contains(stdout, "redis+cluster://alice:xxxxx@"+a.Masters[0].Addr) {
		t.Fatalf("status: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	noPassword(t, stdout, stderr)
	code, _, stderr = runCmd(t, env, "exec", "--key", key, "--", "true")
	if code != exitTempFail {
		t.Fatalf("exec on a held key: exit %d\nstderr: %s", code, stderr)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// --cluster with --votes: the votes are keys on distinct masters, and status names each one's
// master.
func TestExecAndStatusOnVotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	withUser(t, cl)
	url := fmt.Sprintf("redis+cluster://%s:%s@%s", user, password, cl.Masters[0].Addr)
	const key = "orders:42"

	code, stdout, stderr := runCmd(t, nil, "exec", "--cluster", url, "--votes", "3", "--key", key, "--", "sh", "-c", "exit 3")
	if code != 3 {
		t.Fatalf("exec: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	locker, err := redlock.NewCluster(ctx, cl.Client(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	l, err := locker.TryLock(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	var st lockStatus
	code, stdout, stderr = runCmd(t, nil, "status", "--cluster", url, "--votes", "3", "--key", key, "-json")
	if err := jsonDecode(stdout, &st); err != nil || code != 0 {
		t.Fatalf("status: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	if st.Verdict != verdictHeld || st.Votes != 3 || len(st.Nodes) != 3 {
		t.Fatalf("status: %+v", st)
	}
	masters := map[string]bool{}
	for _, n := range st.Nodes {
		masters[n.Master] = true
	}
	for _, m := range cl.Masters {
		if !masters[m.Addr] {
			t.Fatalf("no vote on master %s: %+v", m.Addr, st.Nodes)
		}
	}
	code, stdout, _ = runCmd(t, nil, "status", "--cluster", url, "--votes", "3", "--key", key)
	if code != 0 || !strings.Contains(stdout, "} on "+cl.Masters[1].Addr) || !strings.Contains(stdout, "verdict: held on a quorum (3/3 nodes)") {
		t.Fatalf("status: exit %d\n%s", code, stdout)
	}
	noPassword(t, stdout)
}

func TestClusterFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "redis+cluster://127.0.0.1:1"}, "--cluster needs --votes"},
		{[]string{"--nodes", "redis://127.0.0.1:1", "--votes", "3"}, "--votes goes with --cluster"},
		{[]string{"--nodes", "redis://127.0.0.1:1", "--cluster", "redis+cluster://127.0.0.1:2", "--votes", "1"}, "not both"},
		{[]string{"--cluster", "redis://127.0.0.1:1", "--votes", "1"}, "--cluster takes one redis+cluster://"},
		{[]string{"--cluster", "redis+cluster://127.0.0.1:1?colour=red", "--votes", "1"}, "colour"},
	} {
		code, _, stderr := runCLI(t, append([]string{"status", "--key", "k"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("status %q: exit %d, %s; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
