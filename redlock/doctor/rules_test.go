package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// Every command the scripts call is among those Check looks for (COMMAND INFO) and dry-runs
// (ACL DRYRUN).
func TestCheckNeedsEveryScriptedCommand(t *testing.T) {
	files, err := filepath.Glob("../../internal/wire/scripts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\(["']([A-Za-z]+)["']`)
	dry := map[string]bool{}
	for _, try := range (&doctor{}).dryRuns(nil) {
		dry[try[0]] = true
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			name := strings.ToUpper(m[1])
			if !slices.Contains(scripted, name) && !slices.Contains(sent, name) {
				t.Errorf("%s calls %s, which Check does not look for", filepath.Base(f), name)
			}
			if !dry[name] {
				t.Errorf("%s calls %s, which Check does not dry-run", filepath.Base(f), name)
			}
		}
	}
}

// samplesOf returns n samples of a node whose clock runs at 1+rate of the local clock and is
// offset ahead of it, each call taking rtt, every apart.
func samplesOf(n int, every, rtt time.Duration, rate float64, offset time.Duration) []sample {
	start := time.Now()
	out := make([]sample, n)
	for i := range out {
		s := sample{sent: start.Add(time.Duration(i) * every)}
		s.got = s.sent.Add(rtt)
		s.server = start.Round(0).Add(offset + time.Duration((1+rate)*float64(s.mid().Sub(start))))
		out[i] = s
	}
	return out
}

// A Client of n nodes with the default options, and a reading of each: a master of its own
// with the samples of clocks[i], the offset of its clock.
func judged(n int, clocks map[int]time.Duration) (*judge, []*reading) {
	c := &doctor{nodeTimeout: 100 * time.Millisecond, driftFactor: 0.01, quorum: quorum.Of(n), clock: clock.Real}
	rs := make([]*reading, n)
	for i := range rs {
		rs[i] = &reading{node: i, info: map[string]string{"role": "master", "run_id": string(rune('a' + i))},
			samples: samplesOf(50, 20*time.Millisecond, time.Millisecond, 0, clocks[i])}
	}
	j := &judge{c: c, rs: rs, w: window{bound: time.Second}}
	j.fitClocks()
	return j, rs
}

// One clock far off is warned of, on that node alone; two are a failure on each, since the
// median outvotes one; healthy clocks are never blamed, with 3 nodes or 5, and all the nodes
// agreeing is no finding whatever this machine's own clock says.
func TestCheckClockFarOff(t *testing.T) {
	for _, c := range []struct {
		name   string
		n      int
		clocks map[int]time.Duration
		want   map[int]Verdict
	}{
		{"one of five", 5, map[int]time.Duration{3: time.Hour}, map[int]Verdict{3: Warn}},
		{"one of three, behind", 3, map[int]time.Duration{1: -time.Hour}, map[int]Verdict{1: Warn}},
		{"two of five", 5, map[int]time.Duration{1: time.Hour, 4: -2 * time.Second}, map[int]Verdict{1: Fail, 4: Fail}},
		{"two of three", 3, map[int]time.Duration{1: time.Hour, 2: 2 * time.Hour}, map[int]Verdict{1: Fail, 2: Fail}},
		{"two of three, alike", 3, map[int]time.Duration{0: time.Hour, 1: time.Hour}, map[int]Verdict{0: Fail, 1: Fail}},
		{"all off from this machine", 5, map[int]time.Duration{0: time.Hour, 1: time.Hour, 2: time.Hour, 3: time.Hour, 4: time.Hour}, nil},
		{"within a second", 3, map[int]time.Duration{0: 500 * time.Millisecond, 2: -400 * time.Millisecond}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, rs := judged(c.n, c.clocks)
			for i, r := range rs {
				v, detail := j.clock(r)
				if v != c.want[i] || (v != OK) != strings.Contains(detail, "the median of the nodes' clocks") {
					t.Errorf("node %d: %s: %s; want %s", i, v, detail, c.want[i])
				}
			}
		})
	}
}

// The rate comes out within its stated spread, and beyond the drift factor fails.
func TestFitClock(t *testing.T) {
	for _, rate := range []float64{0, 0.02, -0.02, 0.005} {
		f, err := fitClock(samplesOf(30, 10*time.Millisecond, time.Millisecond, rate, 0))
		if err != nil {
			t.Fatal(err)
		}
		if d := f.rate - rate; d > f.spread || -d > f.spread || f.spread > 0.01 {
			t.Errorf("rate %v: fitted %v ± %v", rate, f.rate, f.spread)
		}
	}
	if _, err := fitClock(samplesOf(1, 0, time.Millisecond, 0, 0)); err == nil {
		t.Error("a clock fitted on one sample")
	}
	j, rs := judged(3, nil)
	rs[1].samples = samplesOf(50, 20*time.Millisecond, time.Millisecond, 0.05, 0)
	j.fitClocks()
	if v, detail := j.clock(rs[1]); v != Fail || !strings.Contains(detail, "5.00% fast") {
		t.Errorf("5%% fast: %s: %s", v, detail)
	}
	rs[1].samples = samplesOf(3, time.Millisecond, 5*time.Millisecond, 0, 0)
	j.fitClocks()
	if v, detail := j.clock(rs[1]); v != Warn || !strings.Contains(detail, "sample longer") {
		t.Errorf("sampled too short: %s: %s", v, detail)
	}
}

// The p99 round trip against the node timeout (100 ms): over half warns, over it fails, and a
// call with no reply fails.
func TestCheckLatencyRule(t *testing.T) {
	j, rs := judged(1, nil)
	for _, c := range []struct {
		rtt  time.Duration
		late bool
		want Verdict
	}{{time.Millisecond, false, OK}, {60 * time.Millisecond, false, Warn}, {120 * time.Millisecond, false, Fail}, {time.Millisecond, true, Fail}} {
		rs[0].samples = samplesOf(200, time.Millisecond, time.Millisecond, 0, 0)
		for i := range 3 { // 3 of 200: beyond the 99th percentile's 2
			rs[0].samples[i].got = rs[0].samples[i].sent.Add(c.rtt)
			rs[0].samples[i].late = c.late
		}
		if v, detail := j.latency(rs[0]); v != c.want {
			t.Errorf("3 calls of %v (late %v): %s: %s; want %s", c.rtt, c.late, v, detail, c.want)
		}
	}
}

// The number of nodes, and how many answered and count as votes: not a replica, nor a node
// that refuses writes.
func TestCheckQuorumRule(t *testing.T) {
	for _, c := range []struct {
		n, down int
		replica bool
		refused error // node 0's refusal of the write probe
		want    []string
	}{
		{1, 0, false, nil, []string{"warn 1 node: its failure stops every lock"}},
		{2, 0, false, nil, []string{"warn 2 nodes: a quorum is 2, so one failure stops every lock"}},
		{4, 0, false, nil, []string{"warn 4 nodes: a quorum is 3, which survives 1 failure, as 3 nodes do"}},
		{5, 0, false, nil, []string{"ok 5 of 5 nodes answered, quorum 3: locks stay available while up to 2 more fail"}},
		{3, 1, false, nil, []string{"ok 2 of 3 nodes answered, quorum 2: one more failure stops every lock"}},
		{5, 3, false, nil, []string{"fail 2 of 5 nodes answered, fewer than a quorum (3)"}},
		{3, 1, true, nil, []string{"fail 1 of the 2 nodes that answered count as votes (node 2 is a replica)"}},
		{5, 0, true, nil, []string{"warn 4 of the 5 nodes that answered count as votes (node 4 is a replica)", "locks survive 1 failure, not 2"}},
		{3, 0, false, errors.New("NOREPLICAS Not enough good replicas to write."),
			[]string{"warn 2 of the 3 nodes that answered count as votes (node 0 refuses writes (NOREPLICAS))"}},
		{3, 0, true, errors.New("MISCONF Redis is configured to save RDB snapshots"),
			[]string{"fail 1 of the 3 nodes that answered count as votes (node 0 refuses writes (MISCONF); node 2 is a replica)"}},
		{3, 0, false, errors.New("ERR unknown command 'evalsha', with args beginning with: "),
			[]string{"warn 2 of the 3 nodes that answered count as votes (node 0 fails writes (ERR))"}},
		{3, 0, false, errNoAnswer, []string{"ok 3 of 3 nodes answered"}}, // a write with no reply refuses nothing
	} {
		j, rs := judged(c.n, nil)
		for _, r := range rs[:c.down] {
			r.reach = errNoAnswer
		}
		if c.replica {
			rs[c.n-1].info["role"] = "slave"
		}
		rs[0].wrote = c.refused
		var got []string
		for _, f := range j.quorum() {
			got = append(got, f.Verdict.String()+" "+f.Detail)
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
				t.Errorf("%d nodes, %d down, replica %v, refused %v: %q, want %q", c.n, c.down, c.replica, c.refused, got, w)
			}
		}
	}
}

var errNoAnswer = late(time.Second)

// The summary names the failed checks, counts the warnings, and says when all passed.
func TestCheckupSummary(t *testing.T) {
	f := func(node int, check string, v Verdict) Finding { return Finding{Node: node, Check: check, Verdict: v} }
	for _, c := range []struct {
		fs   []Finding
		want string
	}{
		{[]Finding{f(0, "role", OK), f(-1, "quorum", OK)}, "every check passed"},
		{[]Finding{f(0, "role", Warn), f(-1, "quorum", OK)}, "no check failed; 1 warning"},
		{[]Finding{f(0, "role", Warn), f(1, "eviction", Fail), f(-1, "quorum", Fail)}, "2 of 3 checks failed (node 1 eviction, quorum); 1 warning"},
		{slices.Repeat([]Finding{f(2, "acl", Fail)}, 8), "8 of 8 checks failed (node 2 acl, node 2 acl, node 2 acl, node 2 acl, node 2 acl, node 2 acl and 2 more); 0 warnings"},
	} {
		if got := (Checkup{Findings: c.fs}).Summary(); got != c.want {
			t.Errorf("Summary = %q, want %q", got, c.want)
		}
	}
	if OK.String() != "ok" || Warn.String() != "warn" || Fail.String() != "fail" || Verdict(7).String() != "Verdict(7)" {
		t.Error("Verdict.String")
	}
}
