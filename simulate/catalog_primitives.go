package simulate

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// primitiveScenarios are the rows of the primitives on the quorum: the semaphore against the
// majority rule, and the RWMutex under faults.
func primitiveScenarios() []Scenario {
	return []Scenario{
		{
			Name: "semaphore-partition", Row: "semaphore of 2 permits, 5 nodes; clients 1-3 reach 3 nodes each ({A,B,C}, {C,D,E}, {A,B,D}), clients 4-5 all", Expect: Safe,
			Permits: 2, Clients: 5, Sections: 300, setup: semaphorePartition,
		},
		{
			Name: "semaphore-partition-majority", Row: "the same with a majority quorum (majority-semaphore, the npm redis-semaphore rule): more than 2 holders", Expect: Violation,
			Strategy: MajoritySemaphore, Permits: 2, Clients: 5, setup: semaphorePartition,
		},
		{
			Name: "rwmutex-crash-minority", Row: "RWMutex, 2 writers and 2 readers; 1–2 nodes crash and stay down", Expect: Safe,
			RW: true, Clients: 4, Sections: 300, setup: crashMinority,
		},
		{
			Name: "rwmutex-partition", Row: "RWMutex: writer 1 and reader 2 reach 3 nodes each, sharing one", Expect: Safe,
			RW: true, Clients: 4, Sections: 300, setup: func(r *run) { r.split() },
		},
	}
}

// semaphorePartition cuts clients 1 to 3 from all nodes but {A,B,C}, {C,D,E} and {A,B,D}: each
// reaches a majority, and the three fit on the nodes with no node above 2 holders (A: 1 and 3,
// B: 1 and 3, C: 1 and 2, D: 2 and 3, E: 2). A majority quorum lets all three hold at once; a
// quorum of 4 lets none of them hold, and clients 4 and 5, who reach every node, share it.
// Clients 4 and 5 start a TTL later, so that clients 1 to 3 are not crowded out by holders of
// every node while they first try. With the majority quorum, the first sections of clients 1
// to 3 wait for one another (each at most until its validity is nearly used up), so that the
// three hold at once however late the machine runs them. When the strategy is this module's,
// the run must show two holders at once at some moment, or it proved nothing about the permits.
func semaphorePartition(r *run) {
	r.clients[3].start, r.clients[4].start = TTL, TTL
	if r.sc.Strategy == MajoritySemaphore {
		m := r.meet(3, []int{0, 1, 2}, "clients 1-3 wait for one another to enter")
		for c := range 3 {
			r.arm(c, plan{fullValidity: true, margin: TTL / 10, meet: m})
		}
		r.at(0, "clients 1-3: their first sections work until all three have entered one (or their validity is nearly used up)", func() {})
	}
	for c, reach := range [][]int{{0, 1, 2}, {2, 3, 4}, {0, 1, 3}} {
		var names []string
		for n, l := range r.clients[c].links {
			if slices.Contains(reach, n) {
				names = append(names, r.nodes[n].name)
			} else {
				l.setCut(true)
			}
		}
		r.at(0, fmt.Sprintf("client %d: reaches only %s", c+1, strings.Join(names, ",")), func() {})
	}
	if r.sc.Strategy == Redlock {
		r.check = needPermitsUsed
	}
}

// needPermitsUsed fails a semaphore run in which no two sections were ever open at once.
func needPermitsUsed(res *Result) string {
	if crowded := crowds(slices.Clone(res.Sections), 1); len(crowded) == 0 {
		return "never two holders at once: the permits were not used"
	}
	for _, s := range res.Sections {
		if s.Client < 3 && s.Exit > s.Enter {
			return fmt.Sprintf("client %d, reaching 3 nodes, held the semaphore at %v", s.Client+1, s.Enter.Round(time.Millisecond))
		}
	}
	return ""
}
