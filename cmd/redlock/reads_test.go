package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// holdAll takes the lock "k" and leads the election "e" with value "leader-1" through the
// library, waits until every node holds both, and returns the term and a node the other two of
// which hold the term's value too (its second round goes to the nodes that said yes first).
func (c *cluster) holdAll(t *testing.T) (*redlock.Term, int) {
	t.Helper()
	ctx := context.Background()
	l, err := c.locker.Lock(ctx, "k", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock(context.Background()) })
	e, err := c.locker.Election("e", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(ctx, "leader-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Resign(context.Background()) })
	k, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "every node holds the lock and the term", func() bool {
		return c.holders(t, "k") == 3 && c.holders(t, k.Election("e").Lock) == 3
	})
	spare := 0
	for i, cl := range c.clients {
		if n, err := cl.Exists(ctx, k.Election("e").Value).Result(); err == nil && n == 0 {
			spare = i
		}
	}
	return term, spare
}

// lead makes the library's Client lead election "e" (ttl a minute) with value.
func (c *cluster) lead(t *testing.T, value string) *redlock.Term {
	t.Helper()
	e, err := c.locker.Election("e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(context.Background(), value)
	if err != nil {
		t.Fatal(err)
	}
	return term
}

// With one node of three killed (connection refused: its errors come at once), status of a
// key and of an election answer from the other two every time.
func TestStatusWithANodeKilled(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	term, dead := c.holdAll(t)
	c.servers[dead].Kill()
	wantLeader := `leader "leader-1" term ` + strconv.FormatUint(term.Term(), 10) + " until "
	const runs = 8
	var failed []string
	for range runs { // a node timeout that a busy machine leaves room for
		code, stdout, stderr := runCmd(t, nil, "status", "--nodes", c.nodes, "--key", "k", "--node-timeout", "5s")
		if code != 0 || !strings.Contains(stdout, "verdict: held on a quorum (2/3 nodes)") {
			failed = append(failed, fmt.Sprintf("status --key: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr))
		}
		code, stdout, stderr = runCmd(t, nil, "status", "--nodes", c.nodes, "--election", "e", "--node-timeout", "5s")
		if code != 0 || !strings.Contains(stdout, wantLeader) {
			failed = append(failed, fmt.Sprintf("status --election: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("with node %d killed, %d of %d runs failed; the first:\n%s", dead, len(failed), 2*runs, failed[0])
	}
}

// status --election names each node as it is when too few answered: the credentials a node
// refused, a connection refused, a stopped node's silence, and the nodes that answered.
func TestStatusElectionNamesEachNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	term, refuses := c.holdAll(t)
	killed, healthy := (refuses+1)%3, (refuses+2)%3
	urls := strings.Split(c.nodes, ",")
	urls[refuses] = strings.Replace(urls[refuses], password, "Wrong-Horse", 1)
	wrong := strings.Join(urls, ",")
	name := func(i int) string { return fmt.Sprintf("  node %d (redis://alice:xxxxx@%s): ", i, c.servers[i].Addr) }
	status := func(nodes string) (int, string, string) {
		// a node timeout that a busy machine leaves room for
		return runCmd(t, nil, "status", "--nodes", nodes, "--election", "e", "--node-timeout", "5s")
	}

	// One node refusing the credentials leaves a quorum: the leader, every time.
	for range 5 {
		code, stdout, stderr := status(wrong)
		if code != 0 || !strings.Contains(stdout, `leader "leader-1" term `+strconv.FormatUint(term.Term(), 10)) {
			t.Fatalf("node %d refusing the credentials: exit %d\nstdout: %s\nstderr: %s", refuses, code, stdout, stderr)
		}
	}

	c.servers[killed].Kill()
	for range 5 {
		code, stdout, stderr := status(wrong)
		if code != 1 || stdout != "" || !hasPrefixLine(stderr, name(refuses)+"WRONGPASS") ||
			!hasPrefixLine(stderr, name(killed)) || !strings.Contains(stderr, "connection refused") ||
			!hasPrefixLine(stderr, name(healthy)+"answered") || strings.Contains(stderr, "decided") {
			t.Fatalf("node %d refusing the credentials, node %d killed: exit %d\nstdout: %s\nstderr: %s", refuses, killed, code, stdout, stderr)
		}
	}
	c.servers[healthy].Pause(t)
	code, stdout, stderr := status(c.nodes)
	if code != 1 || stdout != "" || !hasPrefixLine(stderr, name(healthy)+"no reply within 5s") || !hasPrefixLine(stderr, name(refuses)+"answered") {
		t.Fatalf("node %d killed, node %d stopped: exit %d\nstdout: %s\nstderr: %s", killed, healthy, code, stdout, stderr)
	}
}

// hasPrefixLine reports whether a line of out starts with prefix.
func hasPrefixLine(out, prefix string) bool {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// heldRow matches a row of status's table whose node holds the key.
var heldRow = regexp.MustCompile(`(?m)^[0-9]+ .* held `)

// status shows the owner that exec --owner stored, in the table and in -json, and none when
// exec stored none.
func TestStatusShowsTheOwner(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	for _, owner := range []string{"deploy bot", ""} {
		done := filepath.Join(t.TempDir(), "done")
		r := start(t, []string{"DONE=" + done}, "exec", "--nodes", c.nodes, "--key", "k", "--owner", owner, "--",
			"sh", "-c", `echo ready; while [ ! -e "$DONE" ]; do sleep 0.05; done`)
		r.stdout.waitFor(t, "ready")

		code, stdout, stderr := runCmd(t, nil, "status", "--nodes", c.nodes, "--key", "k", "--node-timeout", "2s")
		header := strings.SplitN(stdout+"\n\n", "\n", 3)[1]
		switch {
		case code != 0:
			t.Errorf("owner %q: exit %d\nstderr: %s", owner, code, stderr)
		case owner != "" && (!strings.Contains(header, "OWNER") || strings.Count(stdout, "  "+owner+"\n") != len(heldRow.FindAllString(stdout, -1)) ||
			!regexp.MustCompile(`verdict: held on a quorum \([23]/3 nodes\) by [^ ]+\.\.\. \(deploy bot\)`).MatchString(stdout)):
			t.Errorf("owner %q: the table does not show it:\n%s", owner, stdout)
		case owner == "" && strings.Contains(header, "OWNER"):
			t.Errorf("no owner, and an OWNER column:\n%s", stdout)
		}
		var st struct {
			Owner string
			Nodes []struct {
				Held  bool
				Owner string
			}
		}
		code, stdout, _ = runCmd(t, nil, "status", "--nodes", c.nodes, "--key", "k", "-json", "--node-timeout", "2s")
		err := jsonDecode(stdout, &st)
		for _, n := range st.Nodes {
			if n.Held && n.Owner != owner {
				err = fmt.Errorf("a node holding the lock shows the owner %q", n.Owner)
			}
		}
		if err != nil || code != 0 || st.Owner != owner || len(st.Nodes) != 3 || (owner == "") == strings.Contains(stdout, `"owner"`) {
			t.Errorf("owner %q: -json: exit %d, %v\n%s", owner, code, err, stdout)
		}
		touch(t, done)
		if code := r.wait(t); code != 0 {
			t.Fatalf("exec: exit %d\nstderr: %s", code, r.stderr)
		}
	}
}

// A password in a URL's query shows nowhere: not in an error about the URL, whichever command
// reads it and however it came (--nodes, --cluster, $REDLOCK_NODES).
func TestPasswordInTheQueryNeverShown(t *testing.T) {
	const secret = "secretpw"
	urls := []string{
		"redis://127.0.0.1:1?password=secretpw",
		"redis://127.0.0.1:1?dial_timeout=1s&password=secretpw",
		"redis://127.0.0.1:1?Password=secretpw",
		"redis://127.0.0.1:1?pass%77ord=secretpw",
		"redis://127.0.0.1:1?sentinel_password=secretpw",
		"redis://127.0.0.1:1/x?password=secretpw",
		"redis://127.0.0.1:port?password=secretpw",
		"redis://127.0.0.1:1?password=secret%zzpw",
		"redis://127.0.0.1:1?password=secretpw#frag",
		"redis://a@b@127.0.0.1:1?password=secretpw",
		"http://127.0.0.1:1?password=secretpw",
		"redis://?password=secretpw",
		"redis://127.0.0.1:1,redis://127.0.0.1:1?password=secretpw",
		"redis+cluster://127.0.0.1:1?password=secretpw",
		"redis+cluster://127.0.0.1:1?addr=127.0.0.1:2&password=secretpw",
	}
	commands := [][]string{
		{"status", "--key", "k"},
		{"status", "--election", "e"},
		{"exec", "--key", "k", "--", "true"},
		{"elect", "--name", "e", "--value", "v", "--", "true"},
		{"elect", "--name", "e", "--observe"},
	}
	for _, u := range urls {
		for _, cmd := range commands {
			args := append([]string{cmd[0], "--nodes", u}, cmd[1:]...)
			code, stdout, stderr := runCLIWithin(t, 10*time.Second, args...)
			if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, "secret%zzpw") || code != exitUsage {
				t.Errorf("%q: exit %d, the password shows or no usage error:\n%s%s", args, code, stdout, stderr)
			}
		}
		t.Setenv("REDLOCK_NODES", u)
		if code, stdout, stderr := runCLIWithin(t, 10*time.Second, "status", "--key", "k"); strings.Contains(stdout+stderr, secret) || code != exitUsage {
			t.Errorf("REDLOCK_NODES=%s: exit %d:\n%s%s", u, code, stdout, stderr)
		}
		if strings.HasPrefix(u, "redis+cluster://") {
			code, stdout, stderr := runCLIWithin(t, 10*time.Second, "status", "--cluster", u, "--votes", "3", "--key", "k")
			if strings.Contains(stdout+stderr, secret) || code != exitUsage {
				t.Errorf("--cluster %s: exit %d:\n%s%s", u, code, stdout, stderr)
			}
		}
	}
}

// runCLIWithin is runCLI, ended after d.
func runCLIWithin(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errOut strings.Builder
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Without --wait, elect campaigns until it leads: it waits in line while another candidate
// leads and runs its command when that one resigns.
func TestElectCampaignsUntilElected(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	term := c.lead(t, "other")
	r := startWith(t, nil, nil, "elect", "--nodes", c.nodes, "--name", "e", "--value", "v", "--verbose", "--", "echo", "ran")
	deadline := time.Now().Add(10 * time.Second)
	for !c.inLine(t) {
		select {
		case <-r.done:
			t.Fatalf("elect without --wait ended while another led: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("elect not in line after 10s\nstderr: %s", r.stderr)
		}
	}
	waitLine(t, r.stderr, `redlock elect: campaigning in "e" until elected`)
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 || r.stdout.String() != "ran\n" {
		t.Fatalf("exit %d, want 0 and the command run\nstdout: %s\nstderr: %s", code, r.stdout, r.stderr)
	}

	code, stdout, _ := runCLI(t, "elect", "-h")
	if code != 0 || !strings.Contains(stdout, "until it leads") || !strings.Contains(stdout, "0 makes one attempt") {
		t.Errorf("elect -h does not say that it campaigns until elected without --wait:\n%s", stdout)
	}
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| `--wait D` | until elected |") {
		t.Error("docs/cli.md does not say that elect campaigns until elected without --wait")
	}
}
