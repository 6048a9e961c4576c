package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// holdAll takes the lock "k" and leads the election "e" with value "leader-1" through the
// library, and waits until every node holds both; it returns the term.
func (c *cluster) holdAll(t *testing.T) *redlock.Term {
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
	names, _ := wire.NewNames("")
	redistest.Eventually(t, "every node holds the lock and the term", func() bool {
		return c.holders(t, "k") == 3 && c.holders(t, names.Election("e").Lock) == 3 && c.holders(t, names.Election("e").Value) == 3
	})
	return term
}

// With one node of three killed (connection refused: its errors come at once), status of a
// key and of an election answer from the other two every time.
func TestStatusWithANodeKilled(t *testing.T) {
	c := startCluster(t)
	term := c.holdAll(t)
	c.servers[0].Kill()
	wantLeader := `leader "leader-1" term ` + strconv.FormatUint(term.Term(), 10) + " until "
	const runs = 10
	var failed []string
	for range runs {
		code, stdout, stderr := runCmd(t, nil, "status", "--nodes", c.nodes, "--key", "k")
		if code != 0 || !strings.Contains(stdout, "verdict: held on a quorum (2/3 nodes)") {
			failed = append(failed, fmt.Sprintf("status --key: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr))
		}
		code, stdout, stderr = runCmd(t, nil, "status", "--nodes", c.nodes, "--election", "e")
		if code != 0 || !strings.Contains(stdout, wantLeader) {
			failed = append(failed, fmt.Sprintf("status --election: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr))
		}
	}
	if len(failed) > 0 {
		t.Fatalf("with node 0 killed, %d of %d runs failed; the first:\n%s", len(failed), 2*runs, failed[0])
	}
}
