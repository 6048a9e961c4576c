package doctor

import (
	"fmt"
	"net"
	"strconv"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// A clusterReading is what a vote's master says of the cluster.
type clusterReading struct {
	master   string // the address of the master that serves the vote's slot now, "" for none
	served   int    // how many slots some master serves
	coverage string // cluster-require-full-coverage
	err      error
}

// readCluster reads who serves vote v's slot (CLUSTER SLOTS) and the cluster's coverage setting.
func readCluster(v *slot, ask asker) clusterReading {
	var cr clusterReading
	reply, err := ask("CLUSTER", "SLOTS")
	if err != nil {
		return clusterReading{err: fmt.Errorf("CLUSTER SLOTS: %w", err)}
	}
	slot := int64(keyslot.Of(v.tag))
	ranges, _ := reply.([]any)
	for _, rg := range ranges {
		r, _ := rg.([]any)
		if len(r) < 3 {
			continue
		}
		first, err1 := number(r[0])
		last, err2 := number(r[1])
		master, _ := r[2].([]any)
		if err1 != nil || err2 != nil || len(master) < 2 {
			continue
		}
		cr.served += int(last - first + 1)
		if first <= slot && slot <= last {
			host, _ := master[0].(string)
			port, _ := number(master[1])
			cr.master = net.JoinHostPort(host, strconv.FormatInt(port, 10))
		}
	}
	reply, err = ask("CONFIG", "GET", "cluster-require-full-coverage")
	if err == nil {
		cr.coverage, err = configValue(reply, "cluster-require-full-coverage")
	}
	if err != nil {
		cr.coverage = "unknown (" + err.Error() + ")"
	}
	return cr
}

// voteIdentity: a vote's slot is served where the Client placed it, by a master of its own.
func (j *judge) voteIdentity(r *reading) (Verdict, string) {
	v, cr := r.vote, r.cluster
	switch {
	case cr.err != nil:
		return Warn, "not checked: " + cr.err.Error()
	case cr.master == "":
		return Fail, fmt.Sprintf("no master serves the slot of tag %s: the vote cannot be had until one does", v.tag)
	}
	for _, o := range j.rs[:r.node] {
		if o.vote != nil && o.info["run_id"] == r.info["run_id"] {
			return Warn, fmt.Sprintf("on the same master as node %d (%s), %s: one master's failure takes both votes, "+
				"which costs fault tolerance, not safety: make the Clients again once the slots are spread", o.node, o.addr, cr.master)
		}
	}
	if cr.master != v.master {
		return Warn, fmt.Sprintf("its slot is served by %s now, not by %s where the Client placed it: a Client made now "+
			"may place this vote elsewhere, and Clients that disagree on a vote do not exclude each other reliably: "+
			"make every Client of a lock from one topology", cr.master, v.master)
	}
	return OK, "its slot is served by " + cr.master + ", as when the Client placed it, and by no other vote's master"
}

// cluster: with NewCluster, every slot served, and one master down not taking every vote.
func (j *judge) cluster() []Finding {
	for _, r := range j.rs {
		if r.vote == nil || r.reach != nil || r.cmd == nil || r.cluster.err != nil {
			continue
		}
		at := func(v Verdict, detail string) Finding {
			return Finding{Node: -1, Check: checkIdentity, Verdict: v, Detail: detail}
		}
		var fs []Finding
		if n := r.cluster.served; n < keyslot.Slots {
			fs = append(fs, at(Warn, fmt.Sprintf("the cluster serves %d of %d slots: keys in the others cannot be locked", n, keyslot.Slots)))
		}
		if r.cluster.coverage != "no" {
			fs = append(fs, at(Warn, "cluster-require-full-coverage "+r.cluster.coverage+": one master down makes every "+
				"master refuse, which takes every vote at once: set it to no"))
		}
		if len(fs) == 0 {
			fs = append(fs, at(OK, fmt.Sprintf("the cluster serves all %d slots, and a master down stops only its own votes", keyslot.Slots)))
		}
		return fs
	}
	return nil
}
