package doctor_test

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/redistest/delayproxy"
	"github.com/quorumlock/redlock/redlock/doctor"
)

// A node that refuses every write fails the write check, which names the server's reason, and
// counts as no vote: short of replicas under min-replicas-to-write (NOREPLICAS), after a failed
// background save (MISCONF, which refuses PING too: the node still answers), out of memory
// (OOM). A node killed (its connection refused) and one stopped (silent) do not answer at all.
func TestCheckWrite(t *testing.T) {
	t.Parallel()
	ok, ok2 := redistest.Start(t), redistest.Start(t)
	noReplicas := redistest.Start(t, "--min-replicas-to-write", "1")
	misconf := redistest.StartMisconf(t)
	full := redistest.Start(t, "--maxmemory", "1", "--maxmemory-policy", "noeviction")
	killed, stopped := redistest.Start(t), redistest.Start(t)
	killed.Kill()
	stopped.Pause(t)
	nodes := []*redistest.Server{ok, noReplicas, misconf, full, killed, stopped, ok2}
	up := checkup(t, time.Second, redistest.Addrs(nodes), doctor.Setup{NodeTimeout: 500 * time.Millisecond})
	expect(t, up, -1, "quorum", doctor.Fail, "2 of the 5 nodes that answered count as votes (node 1 refuses writes (NOREPLICAS); "+
		"node 2 refuses writes (MISCONF); node 3 refuses writes (OOM)), fewer than a quorum (4)")
	for _, f := range up.Findings {
		if f.Check == "reach" && f.Node != 4 && f.Node != 5 {
			t.Errorf("node %d answered, but: %s", f.Node, f.Detail)
		}
	}
	expect(t, up, 4, "reach", doctor.Fail, "no answer", "connection refused")
	expect(t, up, 5, "reach", doctor.Fail, "no answer", "no reply within 1s")
	expect(t, up, 0, "write", doctor.OK, "takes a write")
	expect(t, up, 6, "write", doctor.OK, "takes a write")
	expect(t, up, 1, "write", doctor.Fail, "refuses writes (NOREPLICAS Not enough good replicas to write)", "min-replicas-to-write")
	expect(t, up, 2, "write", doctor.Fail, "refuses writes (MISCONF ", "stop-writes-on-bgsave-error")
	expect(t, up, 3, "write", doctor.Fail, "refuses writes (OOM ", "maxmemory")
	finding(t, up, 2, "clock") // read all the same
}

// A node 600 ms away is read at its pace: its write, two round trips the first time (EVALSHA,
// then EVAL), goes first and alone, and comes within the bound, where behind the batches of
// the configuration's reads it did not.
func TestCheckWriteOnAFarNode(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	far, err := delayproxy.StartDelay(s.Addr, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(far.Close)
	up := checkup(t, 2*time.Second, []string{far.Addr()}, doctor.Setup{NodeTimeout: 500 * time.Millisecond})
	expect(t, up, 0, "write", doctor.OK, "takes a write")
}
