package simulate

import (
	"fmt"
	"time"
)

// The pieces the catalog's scenarios set their faults up with.

// crashMinority crashes one or two nodes for good.
func crashMinority(r *run) {
	for _, n := range r.pick(len(r.nodes), 1+r.rng.IntN(2)) {
		r.crash(r.between(2*time.Second, 8*time.Second), n)
	}
}

func needFailedExtend(res *Result) string {
	if res.FailedExtends == 0 {
		return "no extend failed: the fault missed"
	}
	return ""
}

// pick returns k distinct indexes below n.
func (r *run) pick(n, k int) []int { return r.rng.Perm(n)[:k] }

// firstHolder lets client c start alone; the others start a second later.
func (r *run) firstHolder(c int) {
	for i, cl := range r.clients {
		if i != c {
			cl.start = time.Second
		}
	}
}

// bareMajority cuts client c from two random nodes for the whole run, so that it holds the lock
// on exactly three, and makes it the first holder. It returns the three.
func (r *run) bareMajority(c int) []int {
	p := r.rng.Perm(len(r.nodes))
	r.firstHolder(c)
	for _, n := range p[3:] {
		l := r.clients[c].links[n]
		r.at(0, fmt.Sprintf("client %d: cut from node %s", c+1, r.nodes[n].name), func() { l.setCut(true) })
		l.setCut(true)
	}
	return p[:3]
}

// split cuts client 1 from two nodes and client 2 from two others; they share one node, whose
// index split returns.
func (r *run) split() int {
	p := r.rng.Perm(len(r.nodes))
	r.firstHolder(0)
	cut := func(c, n int) {
		l := r.clients[c].links[n]
		r.at(0, fmt.Sprintf("client %d: cut from node %s", c+1, r.nodes[n].name), func() {})
		l.setCut(true)
	}
	cut(0, p[3])
	cut(0, p[4])
	cut(1, p[0])
	cut(1, p[1])
	return p[2]
}

func (r *run) crash(t time.Duration, n int) {
	r.at(t, fmt.Sprintf("node %s: crashes", r.nodes[n].name), r.nodes[n].crash)
}

func (r *run) restart(t time.Duration, n int, keep bool) {
	what := "restarts with its data"
	if keep {
		r.nodes[n].keepOnRestart()
	} else {
		what = "restarts empty (no persistence)"
	}
	r.at(t, fmt.Sprintf("node %s: %s", r.nodes[n].name, what), func() { r.nodes[n].restart(keep) })
}

// restartAt crashes node n at t and restarts it after delay.
func (r *run) restartAt(t time.Duration, n int, keep bool, delay time.Duration) {
	r.crash(t, n)
	r.restart(t+delay, n, keep)
}

func (r *run) eachLink(n int, f func(*link)) {
	for _, c := range r.clients {
		f(c.links[n])
	}
}

// needRefusal fails a fencing scenario whose fault never made a holder write with a stale token:
// "safe" would then prove nothing about fencing.
func needRefusal(res *Result) string {
	if res.StaleRefused == 0 {
		return "no stale write was refused: the fault missed its window"
	}
	return ""
}

// restartHolderNode restarts, empty and at once, one node of the three that client 1 holds.
func restartHolderNode(r *run) {
	majority := r.bareMajority(0)
	r.arm(0, plan{fullValidity: true, margin: TTL / 10})
	r.onceHeld(func() { r.restartAt(r.between(2*time.Second, 4*time.Second), majority[r.rng.IntN(3)], false, 0) })
}

// failoverHolderVote fails over, before it replicated the key, one master of the three that
// client 1 holds.
func failoverHolderVote(r *run) {
	majority := r.bareMajority(0)
	r.arm(0, plan{fullValidity: true, margin: TTL / 10})
	t := r.between(300*time.Millisecond, 1500*time.Millisecond)
	r.onceHeld(func() {
		n := r.nodes[majority[r.rng.IntN(3)]]
		r.at(t, fmt.Sprintf("node %s: master dies before replicating; its replica is promoted", n.name), n.failover)
	})
}

// pauseHolderBeforeWrite pauses client 1's first section past its validity, after its last
// validity check and before its write.
func pauseHolderBeforeWrite(r *run) {
	r.firstHolder(0)
	pause := TTL + r.between(2*time.Second, 5*time.Second)
	r.arm(0, plan{pauseBefore: pause})
	r.at(0, fmt.Sprintf("client 1: first section pauses %v after its last validity check, before writing", pause), func() {})
}
