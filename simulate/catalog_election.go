package simulate

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// electionSections is how many terms a full test of an election row must see over its seeds:
// every term is a campaign, a keep-alive and a Resign, dearer than a lock's section.
const electionSections = 300

// electionStock is an election row's stock: 30 terms a run, so that the rows stay short in
// real time at their scale.
const electionStock = 30

// electionScale is the least scale of the election rows in real time: their windows (a new
// leader elected between the old term's end and its late write) and their hand-overs are
// counted in node timeouts and retry delays, which at the default 0.05 a loaded machine's
// pauses outweigh (a 30 ms node timeout then stands for 600 ms of scenario time).
const electionScale = 0.2

// electionScenarios are the rows of the leader election: candidates campaign on one election,
// and each leader, for its term, sells from the store with its term number as the fencing
// token, then resigns.
func electionScenarios() []Scenario {
	return []Scenario{
		{
			Name: "elect-leader-partitioned", Row: "election, 3 candidates: the leader is cut from 3 of 5 nodes, its write held up in the partition (REJECTED)", Expect: Safe,
			Strategy: Election, Stock: electionStock, Sections: electionSections, MinScale: electionScale, setup: partitionLeader,
		},
		{
			Name: "elect-leader-paused", Row: "election: the leader's process stops past its ttl after its last check, then writes (REJECTED)", Expect: Safe,
			Strategy: Election, Stock: electionStock, Sections: electionSections, MinScale: electionScale, setup: pauseLeader,
		},
		{
			Name: "elect-clock-jump", Row: "election: 3 of 5 nodes' clocks jump past the ttl while the leader works (its write is REJECTED)", Expect: Safe,
			Strategy: Election, Stock: electionStock, Sections: electionSections, MinScale: electionScale, NodeClocks: true,
			setup: jumpLeaderNodes,
		},
		{
			Name: "elect-resign-contention", Row: "election, 4 candidates: every leader resigns after its work; the next must lead at once", Expect: Safe,
			Strategy: Election, Clients: 4, Stock: electionStock, Sections: electionSections, MinScale: electionScale,
			setup: func(r *run) {
				r.check = func(res *Result) string { return twoLeaders(res.Sections) }
				r.pace = r.needFailover
			},
		},
	}
}

// partitionLeader cuts client 1, leading, from a majority of the nodes, while the write of its
// first term, sent after its last check, is held up in the partition past the term's end: the
// next leader is elected once the keys expire, and the store must refuse the late write, which
// arrives once the next leader has read the store.
func partitionLeader(r *run) {
	r.firstHolder(0)
	stall := TTL + r.between(2*time.Second, 4*time.Second)
	r.arm(0, plan{work: 2 * time.Second, pauseBefore: meetWithin, meet: r.meetAnother(0)})
	r.at(0, fmt.Sprintf("client 1: its first term's write, sent after 2s of work, is held up until another candidate leads and reads the store (at most %v)", meetWithin), func() {})
	cut := r.pick(len(r.nodes), 3)
	r.onceHeld(func() {
		t := r.between(500*time.Millisecond, time.Second)
		for _, n := range cut {
			l := r.clients[0].links[n]
			r.at(t, fmt.Sprintf("client 1 (the leader): cut from node %s", r.nodes[n].name), func() { l.setCut(true) })
			r.at(t+stall+2*time.Second, fmt.Sprintf("client 1: reaches node %s again", r.nodes[n].name), func() { l.setCut(false) })
		}
	})
	r.check = func(res *Result) string { return firstNote(needRefusal(res), twoLeaders(res.Sections)) }
	r.pace = needTakeover
}

// pauseLeader stops client 1's process in its first term, after its last check and before its
// write, until another candidate has been elected and read the store: its keep-alive reaches no
// node meanwhile, its term is lost, and the store must refuse the write it makes on waking.
func pauseLeader(r *run) {
	r.firstHolder(0)
	r.arm(0, plan{work: time.Second, pauseBefore: meetWithin, frozen: true, meet: r.meetAnother(0)})
	r.at(0, fmt.Sprintf("client 1: its process stops in its first term, after its last check, before writing, until another candidate leads and reads the store (at most %v)", meetWithin), func() {})
	r.check = func(res *Result) string {
		return firstNote(needRefusal(res), needLostBeforeRefusal(res), twoLeaders(res.Sections))
	}
	r.pace = needTakeover
}

// jumpLeaderNodes makes the clocks of 3 of the 5 nodes jump past the ttl while client 1 leads
// in its first term, a long one: the keys expire there at once, a second candidate is elected
// while client 1 still believes it leads, and the store must refuse client 1's write.
func jumpLeaderNodes(r *run) {
	r.firstHolder(0)
	r.arm(0, plan{work: 4 * time.Second, meet: r.meetAnother(0)})
	r.at(0, "client 1: its first term works 4s, or until another candidate leads and reads the store", func() {})
	jump := TTL + r.between(0, 2*time.Second)
	nodes := r.pick(len(r.nodes), 3)
	r.onceHeld(func() {
		t := r.between(time.Second, 2*time.Second)
		for _, n := range nodes {
			r.at(t, fmt.Sprintf("node %s (client 1 leads): clock jumps %v forward", r.nodes[n].name, jump),
				func() { r.nodes[n].jump(r.d(jump)) })
		}
	})
	r.check = needRefusal
}

// firstNote returns the first non-empty note.
func firstNote(notes ...string) string {
	for _, n := range notes {
		if n != "" {
			return n
		}
	}
	return ""
}

// needTakeover fails a run in which no other candidate was elected within two ttls of client
// 1's first term: the fault must hand the leadership on, after the term's ttl.
func needTakeover(res *Result) string {
	first := slices.IndexFunc(res.Sections, func(s section) bool { return s.Client == 0 })
	if first < 0 {
		return "client 1 never led"
	}
	from := res.Sections[first].Acquired
	next := time.Duration(-1)
	for _, s := range res.Sections {
		if s.Client != 0 && s.Acquired > from && (next < 0 || s.Acquired < next) {
			next = s.Acquired
		}
	}
	switch {
	case next < 0:
		return "no other candidate was elected after client 1"
	case next > from+2*TTL:
		return fmt.Sprintf("the next leader was elected %.1fs after client 1, more than 2 × the %v ttl", (next - from).Seconds(), TTL)
	}
	return ""
}

// needLostBeforeRefusal fails a run in which a leader wrote with a stale term before its Lost
// channel closed: the library must tell a leader its term is lost before anyone else is elected.
func needLostBeforeRefusal(res *Result) string {
	for _, s := range res.Sections {
		if s.Refused != 0 && (s.Lost == 0 || s.Lost > s.Refused) {
			return fmt.Sprintf("client %d's stale write at %.2fs was refused, but its term's Lost had not closed", s.Client+1, s.Refused.Seconds())
		}
	}
	return ""
}

// The fail-over bounds: Resign hands the leadership to the next candidate in line at once, so a
// hand-over costs the election's two rounds and the wake-up, not a ttl (an expiry) nor a retry
// delay (a missed wake-up). In scenario time: under a millisecond in virtual time; real-time
// runs of the election rows at their scale of 0.2 on redis-server processes, one at a time on
// a 2-core machine at load 5 to 6, measured 22-72 ms at the median and 40-430 ms at most. Two
// at a time (the command's -parallel 2) at that load, a few hand-overs took 4.6 to 10 s: a
// starved candidate first in line holds the others back until its place lapses, and a Resign
// that reaches too few nodes within the node timeout (60 ms of real time) leaves the keys to
// expire, a ttl. The median stays far under its bound either way; the longest is bounded by
// half the ttl, which a hand-over that waits for an expiry exceeds.
const (
	failoverMedianMax = TTL / 50 // 200 ms
	failoverMaxMax    = TTL / 2  // 5 s
)

// needFailover fails a run whose leaders did not hand the leadership on at once: too few
// hand-overs to a waiting candidate, hand-overs slower than the bounds, or too little progress.
func (r *run) needFailover(res *Result) string {
	var why []string
	switch {
	case res.Failovers < res.Acquisitions/2:
		why = append(why, fmt.Sprintf("%d hand-overs to a waiting candidate in %d terms", res.Failovers, res.Acquisitions))
	case res.FailoverMedian > failoverMedianMax:
		why = append(why, fmt.Sprintf("fail-over %.3fs at the median, over %v", res.FailoverMedian.Seconds(), failoverMedianMax))
	case res.FailoverMax > failoverMaxMax:
		why = append(why, fmt.Sprintf("fail-over %.3fs at most, over %v", res.FailoverMax.Seconds(), failoverMaxMax))
	}
	if note := r.needProgress(res); note != "" {
		why = append(why, note)
	}
	return strings.Join(why, "; ")
}
