package simulate

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/redlock/redlock/locktrace"
)

// Metrics is what the observer hook of a run's redlock clients reported (Options.Metrics), in
// scenario time: the figures an operator watches.
type Metrics struct {
	// Calls are the acquiring calls, in the order they returned: redlock.acquire.duration.
	Calls []AcquireCall
	// Waiting is how many calls waited after each change: the redlock.waiting gauge.
	Waiting []Waiting
}

// A Waiting is the number of calls waiting from At on.
type Waiting struct {
	At time.Duration
	N  int
}

// An AcquireCall is one acquiring call of a redlock client of a run (Lock, TryLock or their
// like, Do's included), as the client's Observer reported it, in scenario time: what an
// operator's redlock.acquire.duration histogram records.
type AcquireCall struct {
	At      time.Duration     `json:"at_ns"`   // when the call returned
	Took    time.Duration     `json:"took_ns"` // from the call to its return, waits included
	Outcome locktrace.Outcome `json:"outcome"`
}

// acquisitions is the Observer of a run's redlock clients when Options.Metrics is set. It
// measures calls in true time, not by the clients' clocks, which the scenarios skew.
type acquisitions struct {
	r  *run
	mu sync.Mutex
	m  Metrics
	n  int // calls waiting now
}

// observer returns the hooks that report to a.
func (a *acquisitions) observer() locktrace.Observer {
	return locktrace.Observer{Begin: a.Begin, End: a.End, Waiting: a.waiting, Waited: a.waited}
}

type beganKey struct{}

func (a *acquisitions) Begin(ctx context.Context, c locktrace.Call) context.Context {
	if c.Op != locktrace.OpLock && c.Op != locktrace.OpTryLock {
		return ctx
	}
	return context.WithValue(ctx, beganKey{}, time.Now())
}

func (a *acquisitions) End(ctx context.Context, c locktrace.Call, ret locktrace.Return) {
	began, ok := ctx.Value(beganKey{}).(time.Time)
	if !ok || c.Op != locktrace.OpLock && c.Op != locktrace.OpTryLock {
		return
	}
	now := time.Now()
	acq := AcquireCall{At: a.r.since(now), Took: time.Duration(float64(now.Sub(began)) / a.r.scale), Outcome: ret.Outcome}
	a.mu.Lock()
	a.m.Calls = append(a.m.Calls, acq)
	a.mu.Unlock()
}

func (a *acquisitions) waiting(context.Context, locktrace.Call) { a.count(1) }

func (a *acquisitions) waited(context.Context, locktrace.Call) { a.count(-1) }

// count adds d to the calls waiting now.
func (a *acquisitions) count(d int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n += d
	a.m.Waiting = append(a.m.Waiting, Waiting{At: a.r.since(time.Now()), N: a.n})
}

// result returns what was reported so far.
func (a *acquisitions) result() *Metrics {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &Metrics{Calls: slices.Clone(a.m.Calls), Waiting: slices.Clone(a.m.Waiting)}
}
