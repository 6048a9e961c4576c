package simulate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The pieces the catalog's scenarios set their faults up with.

// crashMinority crashes one or two nodes for good.
func crashMinority(r *run) {
	for _, n := range r.pick(len(r.nodes), 1+r.rng.IntN(2)) {
		r.crash(r.between(2*time.Second, 8*time.Second), n)
	}
}

// crashMajority crashes three nodes for 15 to 20 s: no one may acquire while they are down.
func crashMajority(r *run) {
	down, back := r.between(3*time.Second, 5*time.Second), r.between(15*time.Second, 20*time.Second)
	for _, n := range r.pick(len(r.nodes), 3) {
		r.crash(down, n)
		r.restart(down+back, n, true)
	}
	// Unavailable while they are down: nothing acquired from two seconds after the last
	// crash, when it happened (a busy machine fires it late), until they return (never
	// before their time). A Lock whose quorum answered before the crash returns as late as
	// the machine runs it: the longest lag of the run is slack too.
	r.check = func(res *Result) string {
		from, to := down, down+back
		for _, f := range res.Faults {
			if strings.HasSuffix(f.What, ": crashes") {
				from = max(from, f.At)
			}
		}
		from += 2*time.Second + res.Lag
		for _, s := range res.Sections {
			if s.Acquired > from && s.Acquired < to {
				return fmt.Sprintf("acquired at %v with 3 of 5 nodes down", s.Acquired)
			}
		}
		return ""
	}
}

func needFailedExtend(res *Result) string {
	if res.FailedExtends == 0 {
		return "no extend failed"
	}
	return ""
}

// missedExtend is the missed check of the extend scenarios: no extend failed.
func missedExtend(res *Result) string {
	if res.FailedExtends == 0 {
		return "client 1 extended before the fault took effect"
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
		return "no stale write was refused"
	}
	return ""
}

// mustRefuse is setup with needRefusal for the run's check: the fenced twin of setup's
// scenario, which is safe only by the store refusing the stale write.
func mustRefuse(setup func(*run)) func(*run) {
	return func(r *run) {
		setup(r)
		r.check = needRefusal
	}
}

// holdForAnother arms client 1's first section to work until another client enters one, or
// until its validity is nearly used up (a tenth of the TTL left), then write: the fault that
// lets a second client in while client 1 still holds the lock shows as an overlap however late
// the machine runs the second.
func (r *run) holdForAnother() {
	r.arm(0, plan{fullValidity: true, margin: TTL / 10, meet: r.meetAnother(0)})
	r.at(0, "client 1: its first section works until another client enters one (or its validity is nearly used up)", func() {})
}

// restartHolderNode restarts, empty and at once, one node of the three that client 1 holds.
func restartHolderNode(r *run) {
	majority := r.bareMajority(0)
	r.holdForAnother()
	r.onceHeld(func() { r.restartAt(r.between(2*time.Second, 4*time.Second), majority[r.rng.IntN(3)], false, 0) })
}

// restartBesideClockBehind sets one node's clock an hour behind and cuts client 1 from it for
// the whole run, so that client 1 holds on the other two; one of those restarts empty while it
// holds, and client 1 writes once another client has entered. The next holder's quorum is then the node whose clock is behind, whose counter no
// holder raised, and the node that lost its counter: only the clocks can keep its token above
// client 1's.
func restartBesideClockBehind(r *run) {
	p := r.rng.Perm(len(r.nodes))
	behind := r.nodes[p[0]]
	r.at(0, fmt.Sprintf("node %s: clock jumps an hour back", behind.name), func() { behind.jump(r.d(-time.Hour)) })
	r.firstHolder(0)
	l := r.clients[0].links[p[0]]
	r.at(0, fmt.Sprintf("client 1: cut from node %s", behind.name), func() {})
	l.setCut(true)
	r.holdForAnother()
	r.onceHeld(func() { r.restartAt(r.between(2*time.Second, 4*time.Second), p[1+r.rng.IntN(2)], false, 0) })
	r.check = needRefusal
}

// failoverHolderVote fails over, before it replicated the key, one master of the three that
// client 1 holds.
func failoverHolderVote(r *run) {
	majority := r.bareMajority(0)
	r.holdForAnother()
	t := r.between(300*time.Millisecond, 1500*time.Millisecond)
	r.onceHeld(func() {
		n := r.nodes[majority[r.rng.IntN(3)]]
		r.at(t, fmt.Sprintf("node %s: master dies before replicating; its replica is promoted", n.name), n.failover)
	})
}

// pauseHolderBeforeWrite pauses client 1's first section past its validity, after its last
// validity check and before its write, until another client has entered a section.
func pauseHolderBeforeWrite(r *run) {
	r.firstHolder(0)
	r.arm(0, plan{pauseBefore: meetWithin, meet: r.meetAnother(0)})
	r.at(0, fmt.Sprintf("client 1: first section pauses after its last validity check, before writing, until another client enters one (at most %v)", meetWithin), func() {})
}

// slowReplies is how late the slow nodes' replies are, drawn for each reply.
var slowReplies = [2]time.Duration{20 * time.Millisecond, 80 * time.Millisecond}

// slowNodes makes two random nodes slow for the whole run, for every client: each reply
// arrives 20 to 80 ms late (requests pass at once), and a share loss of the replies is lost,
// which leaves its connection deaf until the client gives up on it. The run must show
// progress (needProgress) as well as safety.
func slowNodes(r *run, loss float64) {
	f := replyFault{Min: r.d(slowReplies[0]), Max: r.d(slowReplies[1]), Loss: loss}
	for _, n := range r.pick(len(r.nodes), 2) {
		what := fmt.Sprintf("node %s: every reply %v–%v late for every client (node timeout %v)",
			r.nodes[n].name, slowReplies[0], slowReplies[1], 300*time.Millisecond)
		if loss > 0 {
			what += fmt.Sprintf(", %g%% of them lost", loss*100)
		}
		r.at(0, what, func() {})
		for _, c := range r.clients {
			c.links[n].setReplies(f, rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64())))
		}
	}
	r.pace = r.needProgress
	if loss > 0 {
		r.check = func(res *Result) string {
			if res.LostReplies == 0 {
				return "no reply was lost"
			}
			return ""
		}
		r.missed = func(res *Result) string {
			if res.LostReplies == 0 {
				return "the slow nodes delivered every reply"
			}
			return ""
		}
	}
}

// minRateShare is the least share of its workload's pace that a lock must keep to show
// progress, the pace being one section per mean work time, back to back (about what no-faults
// does in virtual time: 9 a second for sections of 20 to 200 ms). A lock whose every hand-over
// waits for its keys to expire manages one section per TTL, 0.1 a second; real-time runs of
// the slow nodes' rows at their scale of 0.2 on a loaded 2-core machine (load 4 to 10), whose
// hand-overs cost five times their real time in scenario time, kept 1.5 to 7 a second. A
// sixteenth of the pace (0.57 a second) parts the two.
const minRateShare = 1.0 / 16

// needProgress fails a run in which the lock stood still or barely moved: no holder for longer
// than twice the TTL (every key that an attempt leaves behind expires within one TTL, so a lock
// that keeps moving is never free for much longer than that), or fewer acquisitions a second,
// from the first to the end, than minRateShare of one per mean work time.
func (r *run) needProgress(res *Result) string {
	if res.NoHolderMax > 2*TTL {
		return fmt.Sprintf("no holder for %.1fs from t=%.1fs: the lock stalled (more than 2 × the %v TTL)",
			res.NoHolderMax.Seconds(), res.NoHolderAt.Seconds(), TTL)
	}
	mean := (r.sc.Work[0] + r.sc.Work[1]) / 2
	least := minRateShare * float64(time.Second) / float64(mean)
	if res.Acquisitions >= 2 && res.AcquisitionRate < least {
		return fmt.Sprintf("%.2f acquisitions a second, under %.2f (1/%.0f of one per section's mean work, %v): the lock barely moved",
			res.AcquisitionRate, least, 1/minRateShare, mean)
	}
	return ""
}
