package simulate

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Expect is what a scenario should show: "safe" or "violation".
type Expect string

// Verdict is what a run showed.
type Verdict string

const (
	Safe      Expect = "safe"
	Violation Expect = "violation"

	// Safe: every critical section ended before the next began, no update was lost, the stock
	// sold out. Violated: two holders acted at once, or an update was lost. Inconclusive: the
	// run found nothing wrong but did not sell the stock before its time was up.
	VerdictSafe         Verdict = "safe"
	VerdictViolated     Verdict = "violation"
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

	Violations    int           `json:"violations"`     // overlapping pairs of critical sections
	LostUpdates   int           `json:"lost_updates"`   // writes over a version the writer had not read
	Oversold      int           `json:"oversold"`       // orders beyond the stock
	Acquisitions  int           `json:"acquisitions"`   // critical sections entered
	Orders        int           `json:"orders"`         // stock written
	Aborted       int           `json:"aborted"`        // sections that gave up: validity used up, extend failed
	Stock         int           `json:"stock"`          // at the start
	WaitMedian    time.Duration `json:"wait_p50_ns"`    // time to acquire
	WaitMax       time.Duration `json:"wait_max_ns"`    // longest time to acquire
	FailedExtends int           `json:"failed_extends"` // extends refused: the lock was lost
	StaleRefused  int           `json:"stale_refused"`  // writes the fenced store refused: a lower token than it had seen
	LostReplies   int           `json:"lost_replies"`   // replies the links lost, each leaving its connection deaf
	Elapsed       time.Duration `json:"elapsed_ns"`     // scenario time the run took

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

type event struct {
	at   time.Duration // scenario time, from the start or from client 1's first acquisition
	held bool          // at counts from client 1's first acquisition
	what string
	do   func()
}

// run is one execution of a scenario: the world it builds and what it records.
type run struct {
	sc      Scenario
	backend Backend
	seed    uint64
	rng     *rand.Rand
	scale   float64
	start   time.Time
	key     string

	ttl, nodeTimeout, margin, poll time.Duration
	retryMin, retryMax             time.Duration // redlock's retry delay, drawn between the two
	workMin, workMax               time.Duration
	fullEvery                      float64
	chunks                         int

	nodes   []*node
	clients []*client
	store   *store
	rec     recorder
	events  []event
	held    bool // events scheduled now count from client 1's first acquisition
	check   func(*Result) string
	rdbs    []*redis.Client
	proxies []*proxy
	metrics *acquisitions // with Options.Metrics
}

// Run executes sc once and checks it. It blocks for the scenario's duration times the scale
// (or no real time at all inside a testing/synctest bubble).
func Run(ctx context.Context, sc Scenario, o Options) Result {
	r := newRun(sc, o)
	if why := r.backend.gap(sc); why != "" {
		res := r.result(false, 0)
		res.Observed, res.OK, res.Note = VerdictNotReproducible, true, why
		r.closeNodes()
		return res
	}
	if err := r.startNodes(ctx); err != nil {
		r.closeNodes()
		res := r.result(false, 0)
		res.Observed, res.OK, res.Note = VerdictError, false, err.Error()
		return res
	}
	return r.execute(ctx)
}

func newRun(sc Scenario, o Options) *run {
	sc = sc.withDefaults()
	scale := o.Scale
	if scale <= 0 {
		scale = 1
	}
	scale = max(scale, sc.MinScale)
	if o.Backend == nil {
		o.Backend = Mini{}
	}
	r := &run{
		sc:        sc,
		backend:   o.Backend,
		seed:      o.Seed,
		rng:       rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed5eed5eed5eed)),
		scale:     scale,
		start:     time.Now(),
		key:       "lock:sku:42",
		fullEvery: sc.FullEvery,
		chunks:    sc.Chunks,
		store:     newStore(sc.Stock),
	}
	if o.Stock > 0 {
		r.store = newStore(o.Stock)
	}
	if o.Metrics {
		r.metrics = &acquisitions{r: r}
	}
	r.store.shared = sc.Permits > 1
	r.ttl = r.d(TTL).Round(time.Millisecond)
	// The node timeout is small against the TTL, but in real time not below what a loaded
	// machine needs to schedule a reply.
	r.nodeTimeout = r.d(300 * time.Millisecond)
	if scale < 1 {
		r.nodeTimeout = max(r.nodeTimeout, 30*time.Millisecond)
	}
	r.margin = r.d(TTL * 3 / 100)
	r.poll = r.d(100 * time.Millisecond)
	r.retryMin, r.retryMax = r.d(100*time.Millisecond), r.d(300*time.Millisecond)
	r.workMin, r.workMax = r.d(sc.Work[0]), r.d(sc.Work[1])
	for i := range sc.Nodes {
		r.nodes = append(r.nodes, r.backend.newNode(string(rune('A'+i)), r.start, sc))
	}
	if sc.Replica {
		for _, n := range r.nodes {
			n.withReplica()
		}
	}
	for i := range sc.Clients {
		c := &client{
			id:    i,
			held:  make(chan struct{}),
			clock: newClientClock(r.start),
			rng:   rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64())),
		}
		for _, n := range r.nodes {
			c.links = append(c.links, newLink(n))
		}
		r.clients = append(r.clients, c)
	}
	if sc.setup != nil {
		sc.setup(r)
	}
	slices.SortStableFunc(r.events, func(a, b event) int {
		if a.held != b.held {
			if a.held {
				return 1
			}
			return -1
		}
		return int(a.at - b.at)
	})
	return r
}

// startNodes starts the nodes (processes, on the real backend) and a proxy for every link when
// clients reach the nodes over TCP; then the run's clock starts. Every clock of the run still
// reads true time then (no fault has fired), so moving the start leaves them right.
func (r *run) startNodes(ctx context.Context) error {
	errs := make([]error, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Go(func() { errs[i] = n.start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if r.backend.tcp() {
		for _, c := range r.clients {
			for _, l := range c.links {
				p, err := listen(l)
				if err != nil {
					return err
				}
				r.proxies = append(r.proxies, p)
			}
		}
	}
	r.start = time.Now()
	return nil
}

func (r *run) redis(l *link) *redis.Client {
	timeout := r.nodeTimeout * 2
	addr, dial := "node-"+l.node.name, l.dial
	if l.proxy != nil {
		addr, dial = l.proxy.addr(), nil
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                     addr,
		Protocol:                 2,
		Dialer:                   dial,
		MaxRetries:               -1,
		DialerRetries:            1,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		PoolSize:                 1 << 12, // never trips go-redis's dial-error breaker
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	r.rdbs = append(r.rdbs, rdb)
	return rdb
}

func (r *run) execute(ctx context.Context) Result {
	horizon := r.d(2*time.Minute + time.Duration(r.store.initial)*3*time.Second)
	ctx, cancel := context.WithTimeout(ctx, horizon)
	defer cancel()

	for _, c := range r.clients {
		l, err := r.newLocker(c)
		if err != nil {
			panic(err) // the scenario's options are the simulator's own: a bug here
		}
		c.lock = l
	}

	done := make(chan struct{})
	var bg sync.WaitGroup
	var fired []Fault
	var firedMu sync.Mutex
	fire := func(e event) {
		e.do()
		firedMu.Lock()
		fired = append(fired, Fault{At: r.since(time.Now()), What: e.what})
		firedMu.Unlock()
	}
	// play runs events from base on, in order, until done.
	play := func(base time.Time, events []event) {
		for _, e := range events {
			t := time.NewTimer(time.Until(base.Add(r.d(e.at))))
			select {
			case <-t.C:
				fire(e)
			case <-done:
				t.Stop()
				return
			}
		}
	}
	split := slices.IndexFunc(r.events, func(e event) bool { return e.held })
	if split < 0 {
		split = len(r.events)
	}
	bg.Go(func() { play(r.start, r.events[:split]) })
	if split < len(r.events) {
		bg.Go(func() {
			select {
			case <-r.clients[0].held:
				play(time.Now(), r.events[split:])
			case <-done:
			}
		})
	}
	if r.sc.Replica {
		bg.Go(func() {
			t := time.NewTicker(r.d(replicationEvery))
			defer t.Stop()
			for {
				select {
				case <-t.C:
					for _, n := range r.nodes {
						n.replicate()
					}
				case <-done:
					return
				}
			}
		})
	}
	sale, soldOut := context.WithCancel(ctx)
	r.store.soldOut = soldOut
	var shoppers sync.WaitGroup
	for _, c := range r.clients {
		shoppers.Go(func() { r.shop(sale, ctx, c) })
	}
	shoppers.Wait()
	soldOut()
	finished := r.store.empty()
	elapsed := r.since(time.Now())
	close(done)
	bg.Wait()
	cancel()
	for _, c := range r.clients {
		for _, l := range c.links {
			l.healReplies()
		}
	}
	for _, c := range r.clients {
		c.lock.Close()
	}
	for _, rdb := range r.rdbs {
		rdb.Close()
	}
	r.closeNodes()
	// The node calls that the Clients abandoned end once their connections closed; let them
	// (a moment of virtual time inside a testing/synctest bubble, which must end without them).
	time.Sleep(10 * time.Millisecond)

	res := r.result(finished, elapsed)
	if r.metrics != nil {
		res.Metrics = r.metrics.result()
	}
	var errs []error
	for _, n := range r.nodes {
		errs = append(errs, n.err())
	}
	if err := errors.Join(errs...); err != nil {
		res.Observed, res.OK, res.Note = VerdictError, false, err.Error()
	}
	slices.SortStableFunc(fired, func(a, b Fault) int { return int(a.At - b.At) })
	res.Faults = fired
	return res
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

func (r *run) closeNodes() {
	for _, p := range r.proxies {
		p.close()
	}
	for _, n := range r.nodes {
		n.close()
	}
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
		Violations:    len(ov),
		LostUpdates:   lost,
		Oversold:      oversold,
		Orders:        orders,
		Stock:         r.store.initial,
		FailedExtends: r.rec.extends,
		LostReplies:   r.lostReplies(),
		Elapsed:       elapsed,
		StaleRefused:  refused,
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
	case res.Violations > 0 || lost > 0 || oversold > 0:
		res.Observed = VerdictViolated
	case !finished:
		res.Observed = VerdictInconclusive
	default:
		res.Observed = VerdictSafe
	}
	res.OK = string(res.Observed) == string(res.Expected)
	if res.OK && r.check != nil {
		res.Note = r.check(&res)
		res.OK = res.Note == ""
	}
	return res
}
