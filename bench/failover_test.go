package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/quorumlock/redlock/redlock"
)

// Case 8's setting, from the issue "Leader election ...": its Bench item.
const (
	candidates = 3 // processes standing in one election, each with clients of its own

	// resignTTL is the terms' ttl when the leader resigns. Resign hands the leadership to the
	// next candidate in line at once, so a fail-over after it must take milliseconds whatever
	// the ttl: at 10 s, one that waited for the term to expire, or for a candidate's 20-100 ms
	// retry timer, stands out by orders of magnitude.
	resignTTL  = 10 * time.Second
	resignHold = 5 * time.Millisecond // each leader's term: the one resigning rejoins the line well within it
	resigns    = 200                  // fail-overs an op

	// crashTTL is the terms' ttl when the leader crashes: nobody is told, the term's key is left
	// to expire, and the next candidate in line takes over on its retry timer, within the ttl
	// plus the retry delay. A short ttl keeps a round's crashes to seconds.
	crashTTL  = time.Second
	crashHold = 10 * time.Millisecond // from a leader's election to its crash
	crashes   = 5                     // fail-overs an op

	failoverDeadline = time.Minute      // an op that has not seen its fail-overs by then stalled
	resignTimeout    = 10 * time.Second // for one Resign call (redlock's ends within its node timeout)
)

// An electionImpl is one election library under test: it makes a candidate with clients of
// its own for the election named name, whose terms last ttl.
type electionImpl struct {
	name      string
	candidate func(b *testing.B, name string, ttl time.Duration, value string) candidate
}

// A candidate is one process standing in an election.
type candidate interface {
	campaign(ctx context.Context) (term, error) // waits until it leads
	crash()                                     // stops as a killed process would: its connections close, nothing is released
	close()                                     // stops cleanly (a crashed candidate: nothing more)
	ttl() time.Duration                         // its terms' ttl, as the servers granted it
}

// A term is one leader's term.
type term interface {
	resign(ctx context.Context) error
	number() uint64   // increases from one leader to the next
	until() time.Time // the end of its validity on the local clock; zero when the library does not say
}

var electionImpls = []electionImpl{
	{"redlock", newRedlockCandidate},
	{"etcd", newEtcdCandidate},
}

// 8. Fail-over of a leader election: 3 candidates, each over clients of its own as 3
// processes would be, stand in one election; redlock on the 5 redis-servers with its defaults,
// etcd's concurrency.Election on a 3-member etcd cluster. With after=resign the leader resigns
// 5 ms after its election (ttl 10 s), then stands again at the end of the line; with
// after=crash it crashes 10 ms after its election (ttl 1 s), leaving its term to expire, and a
// new candidate takes its place in line. The fail-over runs from the start of the leader's
// Resign, or its crash, to the return of the next leader's Campaign. An op is one election of
// 200 fail-overs after a resign, or 5 after a crash. Run with -benchtime=1x.
func BenchmarkFailover(b *testing.B) {
	for _, after := range []struct {
		name string
		run  func(b *testing.B, im electionImpl, name string) failovers
	}{{"resign", resignRun}, {"crash", crashRun}} {
		b.Run("after="+after.name, func(b *testing.B) {
			for _, im := range electionImpls {
				b.Run("impl="+im.name, func(b *testing.B) {
					var all failovers
					for range b.N {
						all.merge(after.run(b, im, "failover:"+newKey()))
					}
					all.report(b)
				})
			}
		})
	}
}

// failovers is what an op measured.
type failovers struct {
	gaps       []time.Duration // the fail-overs
	window     time.Duration   // from the first election to the last fail-over
	overlaps   int             // elections while another candidate led
	backward   int             // terms not above the one before
	failed     int             // Campaign calls that failed other than by the op's end
	resignErrs int             // Resign calls that failed
	stalled    time.Duration   // the wait cut off by the deadline, when the op stalled
	past       []time.Duration // after a crash: from the end of the crashed term's validity to the next leader
	early      int             // after a crash: leaders elected before the crashed term's validity ended
	ttl        time.Duration   // as the servers granted it
}

func (f *failovers) merge(g failovers) {
	f.gaps = append(f.gaps, g.gaps...)
	f.past = append(f.past, g.past...)
	f.window += g.window
	f.overlaps += g.overlaps
	f.backward += g.backward
	f.failed += g.failed
	f.resignErrs += g.resignErrs
	f.early += g.early
	f.stalled = max(f.stalled, g.stalled)
	f.ttl = max(f.ttl, g.ttl)
}

// report reports the fail-overs' p50, p99 and max (a stalled wait included in the max), their
// rate over the window, and the counts that must be 0.
func (f *failovers) report(b *testing.B) {
	b.StopTimer()
	if f.stalled > 0 {
		b.Logf("stalled: no leader %v after the last resign or crash", f.stalled)
	}
	if len(f.gaps) == 0 {
		b.Fatal("no fail-over")
	}
	slices.Sort(f.gaps)
	b.ReportMetric(float64(f.window.Nanoseconds())/float64(len(f.gaps)), "ns/op")
	b.ReportMetric(float64(len(f.gaps))/f.window.Seconds(), "failovers/s")
	b.ReportMetric(us(percentile(f.gaps, 0.50)), "failover-p50-us")
	b.ReportMetric(us(percentile(f.gaps, 0.99)), "failover-p99-us")
	b.ReportMetric(us(max(f.gaps[len(f.gaps)-1], f.stalled)), "failover-max-us")
	b.ReportMetric(float64(f.overlaps), "two-leaders")
	b.ReportMetric(float64(f.backward), "terms-backward")
	b.ReportMetric(float64(f.failed), "failed-campaigns")
	b.ReportMetric(float64(f.resignErrs), "failed-resigns")
	b.ReportMetric(f.ttl.Seconds(), "ttl-s")
	if len(f.past) > 0 {
		slices.Sort(f.past)
		b.ReportMetric(us(f.past[0]), "past-validity-min-us")
		b.ReportMetric(us(f.past[len(f.past)-1]), "past-validity-max-us")
		b.ReportMetric(float64(f.early), "early")
	}
}

// ledger records an op's elections, shared by its candidates.
type ledger struct {
	mu      sync.Mutex
	want    int // fail-overs
	f       failovers
	first   time.Time // the first election
	vacated time.Time // the start of the latest resign or crash no leader followed yet
	crashed term      // the term of the latest crash no leader followed yet
	leaders int       // candidates leading now
	last    uint64    // the latest term
}

// elected records an election at now, and reports whether the op has its fail-overs.
func (l *ledger) elected(now time.Time, t term) (enough bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leaders > 0 {
		l.f.overlaps++
	}
	l.leaders++
	if n := t.number(); n <= l.last {
		l.f.backward++
	} else {
		l.last = n
	}
	switch {
	case l.first.IsZero():
		l.first = now
	case !l.vacated.IsZero() && len(l.f.gaps) < l.want:
		l.f.gaps = append(l.f.gaps, now.Sub(l.vacated))
		l.f.window = now.Sub(l.first)
		if l.crashed != nil {
			if until := l.crashed.until(); !until.IsZero() {
				l.f.past = append(l.f.past, now.Sub(until))
				if now.Before(until) {
					l.f.early++
				}
			}
		}
	}
	l.vacated, l.crashed = time.Time{}, nil
	return len(l.f.gaps) >= l.want
}

// vacate records that the leader of t stops leading at now, by a resign or, with crashed, a
// crash.
func (l *ledger) vacate(now time.Time, t term, crashed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaders--
	l.vacated = now
	if crashed {
		l.crashed = t
	}
}

func (l *ledger) campaignFailed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f.failed++
}

func (l *ledger) resignFailed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f.resignErrs++
}

// result returns what the op measured; at its deadline, the wait it cut off counts as stalled.
func (l *ledger) result(deadline bool) failovers {
	l.mu.Lock()
	defer l.mu.Unlock()
	if deadline && !l.vacated.IsZero() {
		l.f.stalled = time.Since(l.vacated)
	}
	return l.f
}

// resignRun runs one election of resigns fail-overs: each leader resigns after resignHold and
// stands again.
func resignRun(b *testing.B, im electionImpl, name string) failovers {
	cs := make([]candidate, candidates)
	for i := range cs {
		cs[i] = im.candidate(b, name, resignTTL, fmt.Sprintf("candidate-%d", i))
	}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), failoverDeadline)
	defer cancel()
	l := &ledger{want: resigns}
	l.f.ttl = cs[0].ttl()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for ctx.Err() == nil {
				t, err := c.campaign(ctx)
				if err != nil {
					if ctx.Err() == nil {
						l.campaignFailed()
						time.Sleep(resignHold) // not a tight loop on a failing node
					}
					continue
				}
				enough := l.elected(time.Now(), t)
				if enough {
					cancel() // the others stop waiting
				} else {
					time.Sleep(resignHold)
				}
				l.vacate(time.Now(), t, false)
				if err := resign(t); err != nil {
					l.resignFailed()
				}
			}
		})
	}
	wg.Wait()
	return l.result(ctx.Err() == context.DeadlineExceeded)
}

// resign ends t within resignTimeout.
func resign(t term) error {
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	return t.resign(ctx)
}

// crashRun runs one election of crashes fail-overs: each leader crashes after crashHold, and a
// new candidate stands in its place.
func crashRun(b *testing.B, im electionImpl, name string) failovers {
	ctx, cancel := context.WithTimeout(context.Background(), failoverDeadline)
	defer cancel()
	l := &ledger{want: crashes}
	var cs []candidate
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	var wg sync.WaitGroup
	crashed := make(chan struct{})
	stand := func() {
		c := im.candidate(b, name, crashTTL, fmt.Sprintf("candidate-%d", len(cs)))
		cs = append(cs, c)
		l.mu.Lock()
		l.f.ttl = c.ttl()
		l.mu.Unlock()
		wg.Go(func() {
			for ctx.Err() == nil {
				t, err := c.campaign(ctx)
				if err != nil {
					if ctx.Err() == nil {
						l.campaignFailed()
						time.Sleep(crashHold)
					}
					continue
				}
				if l.elected(time.Now(), t) {
					cancel()
					l.vacate(time.Now(), t, false)
					if err := resign(t); err != nil {
						l.resignFailed()
					}
					return
				}
				time.Sleep(crashHold)
				l.vacate(time.Now(), t, true)
				c.crash()
				select {
				case crashed <- struct{}{}:
				case <-ctx.Done():
				}
				return
			}
		})
	}
	for range candidates {
		stand()
	}
	for {
		select {
		case <-crashed:
			stand()
		case <-ctx.Done():
			wg.Wait()
			return l.result(ctx.Err() == context.DeadlineExceeded)
		}
	}
}

// redlockCandidate is a Client of this library with its defaults, over go-redis clients of its
// own to the 5 servers.
type redlockCandidate struct {
	nodes []redis.UniversalClient
	c     *redlock.Client
	e     *redlock.Election
	value string
	terms time.Duration
}

func newRedlockCandidate(b *testing.B, name string, ttl time.Duration, value string) candidate {
	nodes := clients(b, addrs(b, 5, false))
	c, err := redlock.New(nodes)
	if err != nil {
		b.Fatal(err)
	}
	e, err := c.Election(name, ttl)
	if err != nil {
		b.Fatal(err)
	}
	return &redlockCandidate{nodes: nodes, c: c, e: e, value: value, terms: ttl}
}

func (r *redlockCandidate) campaign(ctx context.Context) (term, error) {
	t, err := r.e.Campaign(ctx, r.value)
	if err != nil {
		return nil, err
	}
	return redlockTerm{t}, nil
}

// crash closes the go-redis clients, as the kernel closes a killed process's connections,
// and then the Client, to end its goroutines: nothing it sends reaches a node any more, so the
// term's key stays until it expires.
func (r *redlockCandidate) crash() {
	for _, n := range r.nodes {
		n.Close()
	}
	r.c.Close()
}

func (r *redlockCandidate) close()             { r.c.Close() }
func (r *redlockCandidate) ttl() time.Duration { return r.terms }

type redlockTerm struct{ t *redlock.Term }

func (t redlockTerm) resign(ctx context.Context) error { return t.t.Resign(ctx) }
func (t redlockTerm) number() uint64                   { return t.t.Term() }
func (t redlockTerm) until() time.Time                 { return t.t.Until() }

// etcdCandidate is an etcd client of its own over the 3 members, with a session (its lease,
// kept alive by the client) and concurrency.Election on it.
type etcdCandidate struct {
	cli     *clientv3.Client
	s       *concurrency.Session
	e       *concurrency.Election
	value   string
	granted time.Duration
	crashed bool
}

func newEtcdCandidate(b *testing.B, name string, ttl time.Duration, value string) candidate {
	cli, err := newEtcdClient(etcdEndpoints(b))
	if err != nil {
		b.Fatal(err)
	}
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(ttl/time.Second)))
	if err != nil {
		cli.Close()
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := cli.TimeToLive(ctx, s.Lease())
	if err != nil {
		s.Close()
		cli.Close()
		b.Fatal(err)
	}
	return &etcdCandidate{cli: cli, s: s, e: concurrency.NewElection(s, "/redlock-bench/"+name), value: value,
		granted: time.Duration(lease.GrantedTTL) * time.Second}
}

func (c *etcdCandidate) campaign(ctx context.Context) (term, error) {
	if err := c.e.Campaign(ctx, c.value); err != nil {
		return nil, err
	}
	return etcdTerm{c.e}, nil
}

// crash closes the client: its session's keep-alives stop with it and the lease is not
// revoked, so the leader's key stays until the lease expires.
func (c *etcdCandidate) crash() {
	c.crashed = true
	c.cli.Close()
}

func (c *etcdCandidate) close() {
	if !c.crashed {
		c.s.Close() // revokes the lease
		c.cli.Close()
	}
}

func (c *etcdCandidate) ttl() time.Duration { return c.granted }

type etcdTerm struct{ e *concurrency.Election }

func (t etcdTerm) resign(ctx context.Context) error { return t.e.Resign(ctx) }
func (t etcdTerm) number() uint64                   { return uint64(t.e.Rev()) }
func (t etcdTerm) until() time.Time                 { return time.Time{} }
