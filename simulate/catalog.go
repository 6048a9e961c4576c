package simulate

import (
	"fmt"
	"path"
	"slices"
	"time"
)

// TTL is the lock's time to live in every scenario, before scaling.
const TTL = 10 * time.Second

// replicationEvery is how often the asynchronous replica catches up with its master: rarely
// enough that a failover soon after an acquisition loses it.
const replicationEvery = 5 * time.Second

// A Scenario is one row of the catalog: a topology, a strategy, a workload and the faults that
// hit it, with the outcome the design predicts.
type Scenario struct {
	Name     string
	Row      string // what the scenario does, in a line
	Expect   Expect
	Strategy Strategy
	Nodes    int              // masters; default 5 for redlock, 1 for the naive locks
	Replica  bool             // every node has an asynchronous replica that a failover promotes
	Clients  int              // default 3
	Stock    int              // default 60
	Work     [2]time.Duration // a critical section's work, uniform; default 20 ms to 200 ms
	// FullEvery is the share of critical sections that work until their validity is nearly
	// used up (3% of the TTL left), which puts holders at the edge the clocks must respect.
	// (The scenarios that expect a violation leave 10% instead: in real time, a sleep that
	// overshoots on a loaded machine would make the holder give up before the fault shows.)
	FullEvery float64
	// Chunks > 1 splits the work and extends the lock between chunks.
	Chunks int
	// NodeClocks says that the faults change the nodes' clocks (jumps, rates): on the real
	// backend, the servers then run under libfaketime.
	NodeClocks bool
	// NotOnReal, when set, says why the row cannot be reproduced on real servers: the real
	// backend then reports that instead of a verdict, and the row does not fail a run.
	NotOnReal string
	// MinScale, when set, is the least scale the row runs at in real time: a smaller
	// Options.Scale gives way to it. The slow nodes' rows check progress in scenario time, in
	// which a pause of the machine weighs 1/scale times its real length; at the default 0.05,
	// a loaded machine's pauses alone stopped the lock for two TTLs.
	MinScale float64
	// Permits > 0 makes the lock a semaphore of that many permits: the checker then counts
	// the moments when more than Permits clients acted at once, and they sell at once.
	Permits int
	// RW makes the lock an RWMutex: even clients write (Lock), odd clients read (RLock), and
	// readers may overlap one another, never a writer.
	RW bool
	// Sections is how many critical sections a full test of a safe scenario must see over its
	// seeds; default 2000. The primitives' rows see fewer: their clients, cut off or woken by
	// every release, cost many attempts per section, and the catalog must stay quick; so do
	// the slow nodes' rows, whose point is progress: 200 sections a seed already meet about 50
	// lost replies in the row that loses them; and so do the election's rows, whose every
	// term costs a campaign, a keep-alive and a Resign.
	Sections int
	// replicateEvery is how often the replicas catch up with their masters; default
	// replicationEvery.
	replicateEvery time.Duration
	setup          func(*run)
}

func (sc Scenario) withDefaults() Scenario {
	if sc.Strategy == "" {
		sc.Strategy = Redlock
	}
	if sc.Nodes == 0 {
		sc.Nodes = 5
		if !sc.Strategy.quorumed() {
			sc.Nodes = 1
		}
	}
	if sc.Clients == 0 {
		sc.Clients = 3
	}
	if sc.Stock == 0 {
		sc.Stock = 60
	}
	if sc.Sections == 0 {
		sc.Sections = 2000
	}
	if sc.replicateEvery == 0 {
		sc.replicateEvery = replicationEvery
	}
	if sc.Work == [2]time.Duration{} {
		sc.Work = [2]time.Duration{20 * time.Millisecond, 200 * time.Millisecond}
	}
	return sc
}

// Match returns the scenarios of the catalog whose name matches the glob pattern (path.Match
// syntax), in catalog order; an error for a malformed pattern.
func Match(pattern string) ([]Scenario, error) {
	var out []Scenario
	for _, sc := range Catalog() {
		ok, err := path.Match(pattern, sc.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Catalog returns every scenario: this module's lock under each fault it must survive or is
// known not to, the simpler locks (single-node, timestamp, two-command releases) under the
// failure each cannot survive, the semaphore's and the RWMutex's rows, the leader election's,
// and the order form's (a submission that must count once).
func Catalog() []Scenario {
	return slices.Concat(lockScenarios(), primitiveScenarios(), electionScenarios(), submissionScenarios())
}

// lockScenarios are the rows of the plain lock and of the simpler single-node locks.
func lockScenarios() []Scenario {
	return []Scenario{
		{
			Name: "no-faults", Row: "no faults, contending clients", Expect: Safe,
		},
		{
			Name: "crash-minority", Row: "1–2 nodes crash and stay down", Expect: Safe,
			setup: crashMinority,
		},
		{
			Name: "crash-majority", Row: "3 nodes crash", Expect: Safe,
			setup: crashMajority,
		},
		{
			Name: "restart-data-lost", Row: "a node of the holder's majority restarts at once, data lost", Expect: Violation,
			setup: restartHolderNode,
		},
		{
			Name: "restart-data-lost-fenced", Row: "a node holding the highest fence counter restarts with data loss (hybrid token: the stale write is REJECTED)", Expect: Safe, Strategy: RedlockFencing,
			setup: mustRefuse(restartHolderNode),
		},
		{
			Name: "clock-behind-restart-fenced", Row: "3 nodes, one clock an hour behind, a node of the holder's majority restarts empty (tokens never go back: the stale write is REJECTED)",
			Expect: Safe, Strategy: RedlockFencing, Nodes: 3, NodeClocks: true,
			setup: restartBesideClockBehind,
		},
		{
			Name: "restart-data-lost-delayed", Row: "the same, restart delayed beyond the TTL", Expect: Safe,
			setup: func(r *run) {
				majority := r.bareMajority(0)
				r.arm(0, plan{fullValidity: true})
				r.onceHeld(func() {
					r.restartAt(r.between(2*time.Second, 4*time.Second), majority[r.rng.IntN(3)], false,
						TTL+r.between(500*time.Millisecond, 2*time.Second))
				})
			},
		},
		{
			Name: "restart-data-kept", Row: "restart keeping data (fsync=always)", Expect: Safe,
			setup: func(r *run) {
				majority := r.bareMajority(0)
				r.arm(0, plan{fullValidity: true})
				r.onceHeld(func() {
					r.restartAt(r.between(2*time.Second, 4*time.Second), majority[r.rng.IntN(3)], true,
						r.between(0, time.Second))
				})
			},
		},
		{
			Name: "replica-failover", Row: "one master + async replica, master dies before replicating, failover", Expect: Violation,
			Nodes: 1, Replica: true,
			setup: func(r *run) {
				r.firstHolder(0)
				r.holdForAnother()
				t := r.between(300*time.Millisecond, 1500*time.Millisecond)
				r.onceHeld(func() {
					r.at(t, "node A: master dies before replicating; its replica is promoted", r.nodes[0].failover)
				})
			},
		},
		{
			// NewCluster's votes are keys on distinct masters of one cluster, each master with
			// an asynchronous replica: the failover of one is a vote restarting without its data.
			Name: "cluster-votes-failover", Row: "one cluster, 5 votes: a master of the holder's bare majority fails over to a replica that missed the key", Expect: Violation,
			Replica: true,
			setup:   failoverHolderVote,
		},
		{
			Name: "cluster-votes-failover-fenced", Row: "the same, with fencing (the stale write is REJECTED)", Expect: Safe, Strategy: RedlockFencing,
			Replica: true,
			setup:   mustRefuse(failoverHolderVote),
		},
		{
			Name: "partition-split", Row: "client 1 reaches A,B,C; client 2 reaches C,D,E; clocks fine", Expect: Safe,
			Clients: 2,
			setup: func(r *run) {
				r.split()
				// Client 2 never holds while client 1 does: it gets 2 of 5 at most.
			},
		},
		{
			Name: "partition-clock-jump", Row: "the same, node C's clock jumps forward past the TTL", Expect: Violation,
			Clients: 2, NodeClocks: true,
			setup: func(r *run) {
				shared := r.split()
				r.holdForAnother()
				jump := TTL + r.between(0, 2*time.Second)
				r.onceHeld(func() {
					r.at(r.between(2*time.Second, 4*time.Second),
						fmt.Sprintf("node %s (reached by both): clock jumps %v forward", r.nodes[shared].name, jump),
						func() { r.nodes[shared].jump(r.d(jump)) })
				})
			},
		},
		{
			Name: "node-rate-within", Row: "node clock rate skew within the drift bound", Expect: Safe,
			FullEvery: 0.01, NodeClocks: true,
			setup: func(r *run) {
				for _, n := range r.nodes {
					rate := 1 + (r.rng.Float64()*2-1)*0.004
					r.at(0, fmt.Sprintf("node %s: clock rate %.4f", n.name, rate), func() { n.setRate(rate) })
				}
			},
		},
		{
			Name: "node-rate-beyond", Row: "node clock rate skew beyond the drift bound", Expect: Violation,
			NodeClocks: true,
			setup: func(r *run) {
				r.firstHolder(0)
				r.holdForAnother()
				for _, n := range r.nodes {
					rate := 1.3 + r.rng.Float64()*0.2
					r.at(0, fmt.Sprintf("node %s: clock rate %.3f", n.name, rate), func() { n.setRate(rate) })
				}
			},
		},
		{
			Name: "latency-spike", Row: "latency spike on one node below the per-node timeout", Expect: Safe,
			setup: func(r *run) {
				n := r.rng.IntN(len(r.nodes))
				lat := r.between(100*time.Millisecond, 250*time.Millisecond)
				from := r.between(2*time.Second, 5*time.Second)
				to := from + r.between(5*time.Second, 10*time.Second)
				r.at(from, fmt.Sprintf("node %s: +%v latency for every client (node timeout %v)", r.nodes[n].name, lat, 300*time.Millisecond),
					func() { r.eachLink(n, func(l *link) { l.setLatency(r.d(lat)) }) })
				r.at(to, fmt.Sprintf("node %s: latency back to 0", r.nodes[n].name),
					func() { r.eachLink(n, func(l *link) { l.setLatency(0) }) })
			},
		},
		{
			// The gray failure: the lock must keep moving (needProgress) as well as stay safe.
			Name: "two-slow-nodes", Row: "5 clients contend; 2 of 5 nodes answer every request 20–80 ms late; the lock must keep moving", Expect: Safe,
			Clients: 5, Sections: 600, MinScale: 0.2,
			setup: func(r *run) { slowNodes(r, 0) },
		},
		{
			Name: "two-slow-nodes-drops", Row: "the same, and 2% of their replies are lost (each leaves its connection deaf)", Expect: Safe,
			Clients: 5, Sections: 600, MinScale: 0.2,
			setup: func(r *run) { slowNodes(r, 0.02) },
		},
		{
			Name: "pause-before-validity", Row: "client paused before validity is computed", Expect: Safe,
			setup: func(r *run) {
				r.firstHolder(0)
				pause := TTL + r.between(time.Second, 3*time.Second)
				r.at(0, fmt.Sprintf("client 1: paused %v between its first quorum and its validity check", pause),
					func() {})
				r.clients[0].clock.pauseAfterQuorum(r.d(pause))
				r.check = func(res *Result) string {
					for _, s := range res.Sections {
						if s.Client == 0 && s.Acquired < pause {
							return "client 1 believed it held the lock through its pause"
						}
					}
					return ""
				}
			},
		},
		{
			Name: "pause-after-acquire", Row: "client paused longer than the validity after acquiring (no fencing)", Expect: Violation,
			setup: pauseHolderBeforeWrite,
		},
		{
			Name: "pause-after-acquire-fenced", Row: "client paused longer than the validity after acquiring, with fencing (the stale write is REJECTED)", Expect: Safe, Strategy: RedlockFencing,
			setup: mustRefuse(pauseHolderBeforeWrite),
		},
		{
			Name: "client-clock-slow", Row: "client clock slow beyond driftFactor", Expect: Violation,
			setup: func(r *run) {
				r.firstHolder(0)
				r.holdForAnother()
				rate := 0.6 + r.rng.Float64()*0.15
				// Slow from the start, not by an event at t=0: such an event raced client 1's
				// first section, and when the section's sleep began first it slept at the true
				// rate, wrote before the key expired and missed the violation (seen under load).
				r.at(0, fmt.Sprintf("client 1: clock rate %.3f", rate), func() {})
				r.clients[0].clock.skew.setRate(rate)
			},
		},
		{
			Name: "set-reply-lost", Row: "reply to SET lost", Expect: Safe,
			setup: func(r *run) {
				c := r.rng.IntN(len(r.clients))
				from := r.between(time.Second, 4*time.Second)
				to := from + r.between(4*time.Second, 8*time.Second)
				for _, n := range r.pick(len(r.nodes), 3) {
					l := r.clients[c].links[n]
					r.at(from, fmt.Sprintf("client %d: replies to SET from node %s lost", c+1, r.nodes[n].name), func() { l.setDrop("set") })
					r.at(to, fmt.Sprintf("client %d: replies from node %s arrive again", c+1, r.nodes[n].name), func() { l.setDrop("") })
				}
			},
		},
		{
			Name: "extend-after-expiry", Row: "extend after expiry", Expect: Safe,
			Chunks: 2,
			setup: func(r *run) {
				r.firstHolder(0)
				pause := TTL + r.between(time.Second, 3*time.Second)
				r.arm(0, plan{work: 3 * time.Second, pauseInWork: pause})
				r.at(0, fmt.Sprintf("client 1: paused %v in its first section, then extends", pause), func() {})
				r.check, r.missed = needFailedExtend, missedExtend
			},
		},
		{
			Name: "extend-on-minority", Row: "extend on a minority", Expect: Safe,
			Chunks: 2,
			setup: func(r *run) {
				r.firstHolder(0)
				r.arm(0, plan{work: 3 * TTL / 2})
				t := r.between(time.Second, 4*time.Second)
				r.onceHeld(func() {
					for _, n := range r.pick(len(r.nodes), 3) {
						l := r.clients[0].links[n]
						r.at(t, fmt.Sprintf("client 1: cut from node %s", r.nodes[n].name), func() { l.setCut(true) })
					}
				})
				r.check, r.missed = needFailedExtend, missedExtend
			},
		},
		{
			Name: "getset-takeover-slow-holder", Row: "a timestamp lock is taken over with GETSET while its holder still works past the timestamp", Expect: Violation,
			Strategy: GetsetTakeover,
			setup: func(r *run) {
				r.firstHolder(0)
				r.arm(0, plan{work: meetWithin, meet: r.meetAnother(0)})
				r.at(0, fmt.Sprintf("client 1: first section works past its lock's expiry, until another client enters one (at most %v)", meetWithin), func() {})
			},
		},
		{
			Name: "get-then-del-release", Row: "a holder paused before its release; its GET then DEL deletes the lock another client took over", Expect: Violation,
			Strategy: GetThenDel, Work: [2]time.Duration{2 * time.Second, 3 * time.Second},
			setup: func(r *run) {
				r.firstHolder(0)
				r.arm(0, plan{work: 200 * time.Millisecond, pauseRelease: meetWithin, meet: r.meetAnother(0)})
				r.at(0, fmt.Sprintf("client 1: first section pauses after writing, before its release, until another client enters one (at most %v)", meetWithin), func() {})
			},
		},
		{
			Name: "single-node-restart", Row: "the lock's only node restarts without its data while a client holds it", Expect: Violation,
			Strategy: SingleNode,
			setup: func(r *run) {
				r.firstHolder(0)
				r.arm(0, plan{work: 8 * time.Second, meet: r.meetAnother(0)})
				r.at(0, "client 1: first section works 8s, or until another client enters one", func() {})
				r.onceHeld(func() { r.restartAt(r.between(2*time.Second, 4*time.Second), 0, false, 0) })
			},
		},
		{
			Name: "get-compare-del-release", Row: "a release paused between its GET-and-compare and its DEL deletes the next holder's lock", Expect: Violation,
			Strategy: GetCompareDel, Work: [2]time.Duration{2 * time.Second, 3 * time.Second},
			setup: func(r *run) {
				r.firstHolder(0)
				r.arm(0, plan{work: 200 * time.Millisecond, pauseInUnlock: meetWithin, meet: r.meetAnother(0)})
				r.at(0, fmt.Sprintf("client 1: first release pauses between its GET and its DEL until another client enters a section (at most %v)", meetWithin), func() {})
			},
		},
	}
}
