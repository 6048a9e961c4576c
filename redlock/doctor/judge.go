package doctor

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A judge weighs the readings of one Check against the assumptions.
type judge struct {
	c    *doctor
	rs   []*reading // by node
	w    window
	fits []clockFit            // by node
	bad  []error               // by node: why its clock was not measured
	far  map[int]time.Duration // the nodes whose clock is far off, and how far ahead
}

// A rule is one check of one node: its verdict and the detail.
type rule struct {
	name     string
	commands bool // it needs commands of the node's own (a Commander)
	judge    func(*reading) (Verdict, string)
}

func (c *doctor) judge(rs []*reading, w window) Checkup {
	j := &judge{c: c, rs: rs, w: w}
	j.fitClocks()
	rules := []rule{
		{checkRole, true, j.role}, {checkWrite, false, j.write}, {checkIdentity, true, j.identity},
		{checkPersistence, true, persistence}, {checkEviction, true, eviction},
		{checkClock, false, j.clock}, {checkLatency, false, j.latency},
		{checkCommands, true, commands}, {checkACL, true, j.acl},
	}
	var up Checkup
	for _, r := range rs {
		at := func(check string, v Verdict, detail string) {
			up.Findings = append(up.Findings, Finding{Node: r.node, Addr: r.addr, Check: check, Verdict: v, Detail: detail})
		}
		if r.reach != nil {
			at(checkReach, Fail, "no answer: "+r.reach.Error()+"; every call to it fails, and the other nodes were checked without it")
			continue
		}
		for _, ru := range rules {
			if ru.commands && r.cmd == nil {
				at(ru.name, Warn, "not checked: "+r.none)
				continue
			}
			v, detail := ru.judge(r)
			at(ru.name, v, detail)
		}
	}
	up.Findings = append(up.Findings, j.cluster()...)
	up.Findings = append(up.Findings, j.quorum()...)
	for _, f := range up.Findings {
		up.Verdict = max(up.Verdict, f.Verdict)
	}
	return up
}

// role: a replica is no independent vote. A read-only one refuses the lock's writes; a writable
// one (replica-read-only no) takes them and votes, but a resync from its master wipes its keys.
func (j *judge) role(r *reading) (Verdict, string) {
	if v, detail, ok := r.has("role"); !ok {
		return v, detail
	}
	if r.info["role"] == "slave" {
		return Fail, j.replica(r)
	}
	if n, _ := strconv.Atoi(r.info["connected_slaves"]); n > 0 {
		return Warn, fmt.Sprintf("a master with %s: a failover to one loses the lock keys it had not received yet, as a "+
			"restart without data does: let a promoted replica serve locks only after the longest ttl in use", plural(n, "replica"))
	}
	return OK, "a master without replicas"
}

// replica says what replica r is, and why it is no vote to count on.
func (j *judge) replica(r *reading) string {
	m, master := j.masterOf(r), net.JoinHostPort(r.info["master_host"], r.info["master_port"])
	const wipes = "it takes the lock's writes and votes, but a resync from %s wipes the lock keys it holds, and with " +
		"them the locks it granted, so it counts as no vote: %s"
	switch {
	case m != nil && writable(r):
		return fmt.Sprintf("a writable replica of node %d (%s), replica-read-only no: "+wipes, m.node, m.addr,
			fmt.Sprintf("node %d", m.node), "give independent masters only")
	case writable(r):
		return fmt.Sprintf("a writable replica of %s, replica-read-only no: "+wipes, master, "its master",
			"give its master, or another independent master, instead")
	case m != nil:
		return fmt.Sprintf("a replica of node %d (%s): it refuses the lock's writes (READONLY), and what it holds "+
			"comes from node %d, so it is no independent vote: give independent masters only", m.node, m.addr, m.node)
	}
	return fmt.Sprintf("a replica of %s: it refuses the lock's writes (READONLY), so it never votes: give its "+
		"master, or another independent master, instead", master)
}

// writable reports whether replica r takes writes of its own (replica-read-only no).
func writable(r *reading) bool { return r.info["slave_read_only"] == "0" }

// has reports whether INFO gave every one of fields, and when not, the warning to give.
func (r *reading) has(fields ...string) (Verdict, string, bool) {
	if r.infoErr != nil {
		return Warn, "not checked: INFO failed: " + r.infoErr.Error(), false
	}
	for _, f := range fields {
		if _, ok := r.info[f]; !ok {
			return Warn, "not checked: INFO has no " + f, false
		}
	}
	return OK, "", true
}

// masterOf returns the node that replica r replicates from, if one was given: the one whose
// replication ID it has, or at the address it names.
func (j *judge) masterOf(r *reading) *reading {
	addr := net.JoinHostPort(r.info["master_host"], r.info["master_port"])
	for _, o := range j.rs {
		if o == r || o.info == nil || o.info["role"] != "master" {
			continue
		}
		if o.info["master_replid"] == r.info["master_replid"] || o.addr == addr {
			return o
		}
	}
	return nil
}

// identity: no server given twice; a vote alone on the master it was placed on.
func (j *judge) identity(r *reading) (Verdict, string) {
	if v, detail, ok := r.has("run_id"); !ok {
		return v, detail
	}
	id := r.info["run_id"]
	if r.vote != nil {
		return j.voteIdentity(r)
	}
	for _, o := range j.rs[:r.node] {
		if o.info["run_id"] == id {
			return Fail, fmt.Sprintf("the same server as node %d (%s), run_id %s: one server counts twice toward the "+
				"quorum: give every server once", o.node, o.addr, short(id))
		}
	}
	return OK, "run_id " + short(id) + ", no other node's"
}

// twin returns the earlier node that is the same server as r, nil for none (votes excepted:
// two votes on one master are distinct keys).
func (j *judge) twin(r *reading) *reading {
	id := r.info["run_id"]
	if id == "" || r.vote != nil {
		return nil
	}
	if i := slices.IndexFunc(j.rs[:r.node], func(o *reading) bool { return o.info["run_id"] == id }); i >= 0 {
		return j.rs[i]
	}
	return nil
}

func short(id string) string { return id[:min(len(id), 8)] + "…" }

// persistence: a restart keeps every acknowledged key only with AOF and appendfsync always.
func persistence(r *reading) (Verdict, string) {
	const rule = "restart it only after the longest ttl in use (docs/locks.md)"
	if v, detail, ok := r.has("aof_enabled"); !ok {
		return v, detail
	}
	switch {
	case r.info["aof_enabled"] != "1":
		return Warn, "no AOF (appendonly no): a restart loses every lock key it held: " + rule + ", or set appendonly yes and appendfsync always"
	case r.fsyncErr != nil:
		return Warn, "AOF on, but appendfsync unknown (" + r.fsyncErr.Error() + "): with anything but always a crash loses the last writes: " + rule
	case r.fsync != "always":
		return Warn, "AOF with appendfsync " + r.fsync + ": a crash loses the lock keys of the last writes: " + rule + ", or set appendfsync always"
	}
	return OK, "AOF with appendfsync always: a restart keeps every lock key it acknowledged"
}

// eviction: with maxmemory, any policy but noeviction can evict a lock key, which has a ttl.
func eviction(r *reading) (Verdict, string) {
	if v, detail, ok := r.has("maxmemory", "maxmemory_policy"); !ok {
		return v, detail
	}
	limit, policy := r.info["maxmemory_human"], r.info["maxmemory_policy"]
	switch {
	case r.info["maxmemory"] == "0":
		return OK, "no maxmemory: no key is ever evicted"
	case policy == "noeviction":
		return OK, "maxmemory " + limit + " with noeviction: when full, writes fail (OOM) and no key is evicted"
	case strings.HasPrefix(policy, "allkeys-"):
		return Fail, "maxmemory " + limit + " with " + policy + ": under memory pressure any key is evicted, lock keys " +
			"too, and a held lock vanishes: set maxmemory-policy noeviction"
	}
	return Fail, "maxmemory " + limit + " with " + policy + ": lock keys have a ttl, so memory pressure evicts them and a " +
		"held lock vanishes: set maxmemory-policy noeviction"
}

// commands: every command the library sends is there.
func commands(r *reading) (Verdict, string) {
	switch {
	case r.cmdsErr != nil:
		return Warn, "not checked: COMMAND INFO failed: " + r.cmdsErr.Error()
	case len(r.missing) > 0:
		return Fail, "renamed or missing: " + strings.Join(r.missing, ", ") + ": the library sends EVALSHA, EVAL, SET, " +
			"PUBLISH, SUBSCRIBE and TIME, and its scripts call " + strings.Join(scripted, ", ") +
			": take the rename-command out of the server's configuration"
	}
	return OK, strings.Join(sent, ", ") + " and the " + strconv.Itoa(len(scripted)) + " commands the scripts call are there"
}

// quorum: how many nodes there are, and how many answered and can vote.
func (j *judge) quorum() []Finding {
	n, q := len(j.rs), j.c.quorum
	answered, voting := 0, 0
	var out []string // why the nodes that answered but count as no vote do not
	for _, r := range j.rs {
		if r.reach != nil {
			continue
		}
		answered++
		if why := j.uncounted(r); why != "" {
			out = append(out, why)
		} else {
			voting++
		}
	}
	uncounted := strings.Join(out, "; ")
	var fs []Finding
	add := func(v Verdict, format string, a ...any) {
		fs = append(fs, Finding{Node: -1, Check: checkQuorum, Verdict: v, Detail: fmt.Sprintf(format, a...)})
	}
	switch {
	case n == 1:
		add(Warn, "1 node: its failure stops every lock: use 3 or 5 independent masters")
	case n == 2:
		add(Warn, "2 nodes: a quorum is 2, so one failure stops every lock, as with 1 node: use 3 or 5 independent masters")
	case n%2 == 0:
		add(Warn, "%d nodes: a quorum is %d, which survives %s, as %d nodes do: use an odd number", n, q, plural(n-q, "failure"), n-1)
	}
	switch {
	case answered < q:
		add(Fail, "%d of %d nodes answered, fewer than a quorum (%d): no lock can be taken, extended or released until %d answer", answered, n, q, q)
	case voting < q:
		add(Fail, "%d of the %d nodes that answered count as votes (%s), fewer than a quorum (%d): no lock can be taken", voting, answered, uncounted, q)
	case voting < answered:
		add(Warn, "%d of the %d nodes that answered count as votes (%s): with a quorum of %d, locks survive %s, not %d",
			voting, answered, uncounted, q, plural(voting-q, "failure"), answered-q)
	case len(fs) == 0 && voting == q:
		add(OK, "%d of %d nodes answered, quorum %d: one more failure stops every lock", answered, n, q)
	case len(fs) == 0:
		add(OK, "%d of %d nodes answered, quorum %d: locks stay available while up to %d more fail", answered, n, q, voting-q)
	}
	return fs
}
