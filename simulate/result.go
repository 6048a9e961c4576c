package simulate

import (
	"slices"
	"time"
)

// Expect is what a scenario should show: "safe" or "violation".
type Expect string

// Verdict is what a run showed.
type Verdict string

const (
	Safe      Expect = "safe"
	Violation Expect = "violation"

	// Safe: every critical section ended before the next began, no update was lost, no fencing
	// token went back, the stock sold out. Violated: two holders acted at once, an update was
	// lost, or a fencing token was not larger than one acquired before it was asked for. Inconclusive: the
	// run found nothing wrong but did not sell the stock before its time was up. The verdict
	// that meets an expectation is that expectation (see Result.OK).
	VerdictSafe                 = Verdict(Safe)
	VerdictViolated             = Verdict(Violation)
	VerdictInconclusive Verdict = "inconclusive"
	// Error: the backend could not run the scenario (a server did not start); Note says why.
	VerdictError Verdict = "error"
	// NotReproducible: the backend cannot reproduce the scenario; Note says why.
	VerdictNotReproducible Verdict = "not-reproducible"
)

// Options tune a run of a scenario.
type Options struct {
	// Seed drives every random choice of the run: the fault schedule, which nodes and clients
	// it hits, the work times.
	Seed uint64
	// Scale multiplies every duration of the scenario (the TTL is 10 s at scale 1). Inside a
	// testing/synctest bubble leave it at 1: virtual time costs nothing. In real time, 0.04
	// gives a 400 ms TTL. Zero means 1. A scenario's MinScale overrides a smaller one.
	Scale float64
	// Stock overrides the scenario's stock when positive: more critical sections.
	Stock int
	// Backend runs the nodes: Mini (in memory) when nil, or Real (redis-server processes,
	// in real time only: not inside a synctest bubble).
	Backend Backend
	// Metrics attaches an Observer to every redlock client, so that Result.Metrics holds
	// what the hook reported.
	Metrics bool
	// Retries is how many times a run that showed the machine rather than the lock (its fault
	// missed its window, or the machine ran it too late to judge its pace) is run again, each
	// time with the next seed at twice the scale (see Run). Inside a testing/synctest bubble
	// nothing runs late: leave it at 0.
	Retries int
}

// Result is what a run of a scenario found. Times are in scenario time (true time divided by
// the scale), so that runs at different scales compare.
type Result struct {
	Scenario string   `json:"scenario"`
	Backend  string   `json:"backend"`
	Strategy Strategy `json:"strategy"`
	Row      string   `json:"row"`
	Expected Expect   `json:"expected"`
	Observed Verdict  `json:"observed"`
	OK       bool     `json:"ok"`
	Note     string   `json:"note,omitempty"` // why OK is false, when the verdict matched
	Seed     uint64   `json:"seed"`
	Scale    float64  `json:"scale"` // true time per scenario time
	// Lag is the longest the machine ran the run late at some moment.
	Lag time.Duration `json:"lag_max_ns"`

	Violations    int           `json:"violations"`      // overlapping pairs of critical sections; forms accepted twice
	LostUpdates   int           `json:"lost_updates"`    // writes over a version the writer had not read
	Oversold      int           `json:"oversold"`        // orders beyond the stock
	Acquisitions  int           `json:"acquisitions"`    // critical sections entered; forms' submissions answered
	Orders        int           `json:"orders"`          // stock written
	Aborted       int           `json:"aborted"`         // sections that gave up: validity used up, extend failed
	Stock         int           `json:"stock"`           // at the start
	WaitMedian    time.Duration `json:"wait_p50_ns"`     // time to acquire
	WaitMax       time.Duration `json:"wait_max_ns"`     // longest time to acquire
	FailedExtends int           `json:"failed_extends"`  // extends refused: the lock was lost
	StaleRefused  int           `json:"stale_refused"`   // writes the fenced store refused: a lower token than it had seen
	Backwards     int           `json:"fence_backwards"` // fencing tokens not larger than one acquired before they were asked for
	LostReplies   int           `json:"lost_replies"`    // replies the links lost, each leaving its connection deaf
	Elapsed       time.Duration `json:"elapsed_ns"`      // scenario time the run took

	// Progress. NoHolderMax is the longest time no client held the lock (every permit free,
	// for a semaphore) from the first client's start to the end of the run: from one holder's
	// Unlock call (or the start) to the next Lock's return (or the end); NoHolderAt is when it
	// began. AcquisitionRate is how many sections a scenario second were entered after the
	// first, from the first acquisition to the end.
	NoHolderMax     time.Duration `json:"no_holder_max_ns"`
	NoHolderAt      time.Duration `json:"no_holder_at_ns"`
	AcquisitionRate float64       `json:"acquisitions_per_s"`

	// Fail-over, for the election: Failovers counts the leaders that resigned while another
	// candidate waited; FailoverMedian and FailoverMax are the times from such a Resign call to
	// the next leader's election.
	Failovers      int           `json:"failovers,omitempty"`
	FailoverMedian time.Duration `json:"failover_p50_ns,omitempty"`
	FailoverMax    time.Duration `json:"failover_max_ns,omitempty"`

	Schedule []string `json:"schedule"`
	// Missed are the runs before this one, with the seeds before Seed, that showed the machine
	// rather than the lock (Options.Retries).
	Missed []Miss `json:"missed,omitempty"`
	miss   string // how this run missed, "" when it did not or its verdict stands

	Sections []section `json:"-"`
	Overlaps []overlap `json:"-"`
	Faults   []Fault   `json:"-"`
	Clients  int       `json:"-"`
	// Metrics are what the redlock clients' observer hook reported, with Options.Metrics.
	Metrics *Metrics `json:"-"`
}

// A Fault is one scheduled event, at a scenario time.
type Fault struct {
	At   time.Duration
	What string
}

// lostReplies counts the connections of every link that lost a reply.
func (r *run) lostReplies() int {
	n := 0
	for _, c := range r.clients {
		for _, l := range c.links {
			n += int(l.deafened.Load())
		}
	}
	return n
}

// result checks what the run recorded; elapsed is the scenario time it took (0 when it did not
// run).
func (r *run) result(finished bool, elapsed time.Duration) Result {
	ss := slices.Clone(r.rec.sections)
	ov := overlaps(ss)
	if r.sc.Permits > 0 {
		ov = crowds(ss, r.sc.Permits)
	}
	orders, lost, oversold := r.store.tally()
	refused := r.store.refusedWrites()
	res := Result{
		Scenario:      r.sc.Name,
		Backend:       r.backend.String(),
		Strategy:      r.sc.Strategy,
		Row:           r.sc.Row,
		Expected:      r.sc.Expect,
		Seed:          r.seed,
		Scale:         r.scale,
		Lag:           time.Duration(float64(r.lag) / r.scale),
		Violations:    len(ov),
		LostUpdates:   lost,
		Oversold:      oversold,
		Orders:        orders,
		Stock:         r.store.initial,
		FailedExtends: r.rec.extends,
		LostReplies:   r.lostReplies(),
		Elapsed:       elapsed,
		StaleRefused:  refused,
		Backwards:     backwards(slices.Clone(ss)),
		Schedule:      r.schedule(),
		Sections:      ss,
		Overlaps:      ov,
		Clients:       len(r.clients),
	}
	var waits []time.Duration
	for _, s := range ss {
		res.Acquisitions++
		if s.Aborted {
			res.Aborted++
		}
		waits = append(waits, s.Acquired-s.Asked)
	}
	r.subs.tally(&res)
	if len(waits) > 0 {
		slices.Sort(waits)
		res.WaitMedian, res.WaitMax = waits[len(waits)/2], waits[len(waits)-1]
	}
	if r.sc.Strategy == Election {
		fo := failovers(ss)
		if res.Failovers = len(fo); len(fo) > 0 {
			slices.Sort(fo)
			res.FailoverMedian, res.FailoverMax = fo[len(fo)/2], fo[len(fo)-1]
		}
	}
	if elapsed > 0 {
		first := slices.MinFunc(r.clients, func(a, b *client) int { return int(a.start - b.start) }).start
		res.NoHolderMax, res.NoHolderAt = noHolder(ss, first, elapsed)
		res.AcquisitionRate = rate(ss, elapsed)
	}
	switch {
	case res.Violations > 0 || lost > 0 || oversold > 0 || res.Backwards > 0:
		res.Observed = VerdictViolated
	case !finished:
		res.Observed = VerdictInconclusive
	default:
		res.Observed = VerdictSafe
	}
	r.judge(&res, elapsed)
	return res
}
