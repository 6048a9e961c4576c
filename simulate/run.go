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
	// pace checks what a run in real time shows only when the machine runs it on time: how
	// fast the lock moved (see miss.go). Its note makes the run not ok, as check's does.
	pace func(*Result) string
	// missed, called on a run that is not ok, says how its fault missed its window ("" when
	// it did not): Run then tries again (see miss.go). Without one, a run missed when one of
	// its meetings did.
	missed   func(*Result) string
	meetings []*meeting
	lag      time.Duration // the longest the machine ran the run's timers late, in true time
	rdbs     []*redis.Client
	proxies  []*proxy
	metrics  *acquisitions // with Options.Metrics
	subs     *submissions  // a submission row's: then clients send forms instead of shopping
}

// runOnce executes sc once with o.Seed and checks it.
func runOnce(ctx context.Context, sc Scenario, o Options) Result {
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
	bg.Go(func() { r.watchLag(done) })
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
			t := time.NewTicker(r.d(r.sc.replicateEvery))
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
	loop := r.shop
	if r.subs != nil {
		loop = r.subs.loop
	}
	for _, c := range r.clients {
		shoppers.Go(func() { loop(sale, ctx, c) })
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
			l.heal()
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
		res.Observed, res.OK, res.Note, res.miss = VerdictError, false, err.Error(), ""
	}
	slices.SortStableFunc(fired, func(a, b Fault) int { return int(a.At - b.At) })
	res.Faults = fired
	return res
}

func (r *run) closeNodes() {
	for _, p := range r.proxies {
		p.close()
	}
	for _, n := range r.nodes {
		n.close()
	}
}
