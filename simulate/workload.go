package simulate

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// A store is the resource the lock protects: a flash sale's stock, kept by the simulator in
// memory so that every read and write is stamped in true time. A write carries the version its
// writer read; a write over a newer version is a lost update.
type store struct {
	mu          sync.Mutex
	initial     int
	stock       int
	version     int
	orders      int
	lostUpdates int
	soldOut     func() // called when the stock reaches 0
	// With fencing: the highest token seen on any access, and the writes refused for carrying
	// a lower one. A token of 0 (no fencing) is never checked.
	highest uint64
	refused int
	// shared: holders may sell at once (a semaphore's), each sale taking one item of the
	// stock as it is then, so that their sales are not lost updates.
	shared bool
}

func newStore(stock int) *store { return &store{initial: stock, stock: stock} }

// read returns the stock and its version; a fencing token raises the highest token seen, so
// that a holder whose lock expired before this reader's cannot write afterwards.
func (s *store) read(fence uint64) (stock, version int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.highest = max(s.highest, fence)
	return s.stock, s.version
}

// sell writes stock-1 as read at version and records the order. With a fencing token lower
// than the highest the store has seen, it refuses the write and reports false.
func (s *store) sell(stock, version int, fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence != 0 && fence < s.highest {
		s.refused++
		return false
	}
	if s.shared {
		if s.stock <= 0 {
			return false
		}
		stock, version = s.stock, s.version
	}
	s.highest = max(s.highest, fence)
	if version != s.version {
		s.lostUpdates++
	}
	s.stock = stock - 1
	s.version++
	s.orders++
	if s.stock <= 0 && s.soldOut != nil {
		s.soldOut()
	}
	return true
}

func (s *store) refusedWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *store) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock <= 0
}

func (s *store) tally() (orders, lost, oversold int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orders, s.lostUpdates, max(0, s.orders-s.initial)
}

// A plan changes a client's next critical section; the scenario's faults arm it.
type plan struct {
	work          time.Duration // this long instead of a random time; see fullValidity
	fullValidity  bool          // work until the validity is nearly used up: margin left
	margin        time.Duration // default 3% of the TTL
	pauseInWork   time.Duration // stop this long in the middle of the work
	pauseBefore   time.Duration // stop this long after the last validity check, before the write
	pauseRelease  time.Duration // stop this long after the write, before the release
	pauseInUnlock time.Duration // stop this long inside a two-command release
	// frozen makes pauseBefore stop the whole client process, not only its goroutine: its
	// links are cut meanwhile, so that its keep-alive reaches no node (its timers still fire).
	frozen bool
	// meet, when set, ends the section's planned wait as soon as the meeting is met: its pause
	// when it has one (then the pause's length is the most it lasts), else its work.
	meet *meeting
}

// pauses reports whether the plan pauses the client somewhere in its section.
func (p plan) pauses() bool { return p.pauseBefore > 0 || p.pauseRelease > 0 || p.pauseInUnlock > 0 }

// A client is one buyer process: its clock, its links to the nodes, its lock.
type client struct {
	id    int
	clock *clientClock
	links []*link
	lock  locker
	rng   *rand.Rand // from the run's seeded source; used by this client's goroutine only
	start time.Duration
	held  chan struct{} // closed at the client's first acquisition
	once  sync.Once

	mu    sync.Mutex
	plans []plan
	armed plan // the current section's plan, for the pause inside its release
}

// arm queues p for the client's next critical section not yet planned.
func (c *client) arm(p plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plans = append(c.plans, p)
}

func (c *client) next() (p plan, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.plans) == 0 {
		return plan{}, false
	}
	p = c.plans[0]
	c.plans = c.plans[1:]
	return p, true
}

func (c *client) inRelease() {
	c.mu.Lock()
	p := c.armed
	c.armed = plan{}
	c.mu.Unlock()
	if p.pauseInUnlock > 0 {
		p.meet.wait(time.NewTimer(p.pauseInUnlock))
	}
}

// shop is the client's loop: lock, read the stock, work, write stock-1, unlock; until the
// stock is gone (sale ends) or the run's time is up (ctx ends).
func (r *run) shop(sale, ctx context.Context, c *client) {
	time.Sleep(r.d(c.start))
	for sale.Err() == nil {
		asked := time.Now()
		h, err := c.lock.Lock(sale, r.key, r.ttl)
		if err != nil {
			continue // Lock gives up only when ctx is done
		}
		s := section{Client: c.id, Asked: r.since(asked), Acquired: r.since(time.Now()), Fence: h.Fence()}
		c.once.Do(func() { close(c.held) })
		p, planned := c.next()
		c.mu.Lock()
		c.armed = p
		c.mu.Unlock()

		lostAt := r.watchLost(h)
		soldOut := r.section(ctx, c, h, p, planned, &s)
		s.Unlock = r.since(time.Now())
		h.Unlock(context.WithoutCancel(ctx))
		s.Released = r.since(time.Now())
		if at := lostAt(); at != 0 && at < s.Unlock {
			s.Lost = at
		}
		r.rec.add(s)
		if soldOut {
			return
		}
	}
}

// section is what client c does while it holds h: read the stock, work, write stock-1 (or
// only read and work, for an RWMutex reader). It fills s and reports whether the stock was
// sold out.
func (r *run) section(ctx context.Context, c *client, h holding, p plan, planned bool, s *section) (soldOut bool) {
	stock, version := r.store.read(h.Fence())
	s.Enter = r.since(time.Now())
	s.Exit = s.Enter
	r.enter(c.id, p.meet)
	if s.Reader = r.reader(c); stock <= 0 {
		return true
	}
	if s.Reader {
		// A reader only reads: its section lasts while it works within its validity.
		if r.work(ctx, c, h, p, planned) {
			s.Exit = r.since(time.Now())
		} else {
			s.Aborted = true
		}
		return false
	}
	if !r.work(ctx, c, h, p, planned) {
		s.Aborted = true
		p.meet.giveUp()
		return false
	}
	r.pause(c, p)
	if r.store.sell(stock, version, h.Fence()) {
		s.Exit = r.since(time.Now())
		s.Wrote = true
	} else if h.Fence() != 0 { // refused: it wrote nothing
		s.Refused = r.since(time.Now())
	}
	if p.pauseRelease > 0 {
		p.meet.wait(time.NewTimer(p.pauseRelease))
	}
	return false
}

// pause stops client c for p.pauseBefore, after its last validity check and before its write;
// a frozen pause cuts its links meanwhile, as a stopped process reaches no node.
func (r *run) pause(c *client, p plan) {
	if p.pauseBefore == 0 {
		return
	}
	if !p.frozen {
		p.meet.wait(time.NewTimer(p.pauseBefore))
		return
	}
	for _, l := range c.links {
		l.setCut(true)
	}
	p.meet.wait(time.NewTimer(p.pauseBefore))
	for _, l := range c.links {
		l.setCut(false)
	}
}

// work spends the critical section's time on the client's clock, checks the validity (for
// strategies that have one) and extends it when the scenario works in chunks. It reports
// whether the client may still write.
func (r *run) work(ctx context.Context, c *client, h holding, p plan, planned bool) bool {
	d := p.work
	if !planned || d == 0 && !p.fullValidity {
		d = r.workMin + time.Duration(c.rng.Int64N(int64(r.workMax-r.workMin)+1))
		if r.fullEvery > 0 && c.rng.Float64() < r.fullEvery {
			p.fullValidity = true
		}
	}
	chunks := max(1, r.chunks)
	for i := range chunks {
		chunk := d / time.Duration(chunks)
		if p.fullValidity {
			margin := r.margin
			if p.margin > 0 {
				margin = p.margin
			}
			until, _ := h.Until()
			chunk = until.Sub(c.clock.now()) - margin
		}
		if meet := p.meet; i == 0 && meet != nil && !p.pauses() {
			meet.wait(c.clock.NewTimer(chunk))
		} else {
			c.clock.sleep(chunk)
		}
		if i == 0 {
			time.Sleep(p.pauseInWork) // before the first extend, or the validity check
		}
		if i < chunks-1 {
			if err := h.Extend(ctx, r.ttl); err != nil {
				r.rec.extendFailed(c.id)
				return false
			}
		}
	}
	if until, ok := h.Until(); ok && !c.clock.now().Before(until) || lost(h) {
		return false
	}
	return true
}
