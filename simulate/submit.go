package simulate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// The order form of seed 001: a form carries a one-time token, and a submission of it must
// count at most once, however often it is sent (a double click, a retry after a timeout). The
// store's stock is the forms: a form's first accepted submission takes one, and a form accepted
// twice is a violation (a duplicate order).

// CheckAndDelete is seed 001's guard against a form submitted twice, on one node: the form's
// token is stored when the form is issued (SET form:TOKEN TOKEN PX life), and a submission is
// accepted when a Lua script finds the token there and deletes it, in one step.
const CheckAndDelete Strategy = "check-and-delete"

// submissionScenarios are the rows of the order form: this library's mark survives a node that
// restarts empty; the seed's token on one master does not survive a failover.
func submissionScenarios() []Scenario {
	return []Scenario{
		{
			Name: "duplicate-submission", Row: "forms submitted once, then again by every client; this library's mark on 5 masters, one restarting empty in between: every resubmission refused", Expect: Safe,
			Stock: submissionForms, Sections: submissionSections,
			setup: func(r *run) {
				n := r.rng.IntN(len(r.nodes))
				submissionRow(r, func(at time.Duration) { r.restartAt(at, n, false, 0) })
			},
		},
		{
			Name: "check-and-delete-failover", Row: "the same with the seed's token checked and deleted by one Lua script on a master; its async replica, promoted, missed the deletes", Expect: Violation,
			Strategy: CheckAndDelete, Replica: true, Stock: submissionForms, Sections: submissionSections,
			setup: func(r *run) {
				submissionRow(r, func(at time.Duration) {
					r.at(at, "node A: master dies before replicating the deletes; its replica is promoted", r.nodes[0].failover)
				})
			},
		},
	}
}

const (
	// submissionForms is a submission row's stock: the forms of a run.
	submissionForms = 6
	// submissionSections is how many submissions a full test of a submission row must see
	// over its seeds: each form is submitted 2 × the clients' times.
	submissionSections = 120
	// formGap is the time between two forms' first submissions, and half of it the time from
	// a first submission to its double clicks, which come once it has landed on every node.
	formGap = 400 * time.Millisecond
)

// A submission is one client's sending of a form (or, issue, client 1's issuing of it).
type submission struct {
	at    time.Duration // scenario time from the start
	token string
	issue bool
}

// submissions drive a submission row: each client's plan, and what the forms' tokens got.
type submissions struct {
	r     *run
	plans [][]submission
	life  time.Duration // a token's lifetime, in real time
	fault time.Duration // when the fault hits, in scenario time

	mu                sync.Mutex
	accepts           map[string]int // per token: its submissions accepted
	answered, gaveUp  int
	refusedAfterFault int
}

// submissionRow plans a run of forms: client 1 issues every form at the start (a replica
// catches up half a second later); each form is first sent by one client alone, and double
// clicked by the others once that landed; fault then hits, and every client sends every form
// again.
func submissionRow(r *run, fault func(at time.Duration)) {
	s := &submissions{r: r, plans: make([][]submission, len(r.clients)), accepts: map[string]int{},
		life: r.d(time.Hour).Round(time.Millisecond)}
	tokens := make([]string, r.store.initial)
	for k := range tokens {
		tokens[k] = fmt.Sprintf("form-%d-%08x", k+1, r.rng.Uint32())
		s.plans[0] = append(s.plans[0], submission{token: tokens[k], issue: true})
	}
	for k, token := range tokens {
		for c := range s.plans {
			at := time.Second + time.Duration(k)*formGap
			if c != k%len(s.plans) {
				at += formGap / 2
			}
			s.plans[c] = append(s.plans[c], submission{at: at, token: token})
		}
	}
	s.fault = time.Second + time.Duration(len(tokens))*formGap + time.Second/2
	again := s.fault + time.Second/2
	for c := range s.plans {
		for k, token := range tokens {
			at := again + time.Duration(c)*formGap/4 + time.Duration(k)*formGap/8
			s.plans[c] = append(s.plans[c], submission{at: at, token: token})
		}
	}
	if r.sc.Replica {
		r.at(time.Second/2, "node A: the replica catches up (it has every form's token)", func() {
			for _, n := range r.nodes {
				n.replicate()
			}
		})
	}
	r.at(time.Second, fmt.Sprintf("%d forms, each sent by one client, then double clicked by the others", len(tokens)), func() {})
	fault(s.fault)
	r.at(again, "every client sends every form again", func() {})
	r.subs = s
	r.check = s.needResubmissions
}

// loop is client c's part of the run: its plan, in order. It fits run.shop's place, and ends
// with its plan, not with the sale.
func (s *submissions) loop(_, ctx context.Context, c *client) {
	r := s.r
	sub, ok := c.lock.(submitter)
	if !ok {
		panic(fmt.Sprintf("simulate: strategy %s takes no forms", r.sc.Strategy)) // a bug of the catalog
	}
	for _, p := range s.plans[c.id] {
		time.Sleep(time.Until(r.start.Add(r.d(p.at))))
		if ctx.Err() != nil {
			return
		}
		if p.issue {
			if err := sub.issue(ctx, p.token, s.life); err != nil {
				s.record(p, failed)
			}
			continue
		}
		s.record(p, s.send(ctx, sub, p.token, c.rng))
	}
}

// An answer is what a submission got.
type answer int

const (
	refused answer = iota
	accepted
	failed // after every try
)

// send submits token, and again after a moment when the submission failed (a node that
// restarts or fails over breaks the connections open to it), as a browser retries.
func (s *submissions) send(ctx context.Context, sub submitter, token string, rng *rand.Rand) answer {
	for range 5 {
		ok, err := sub.submit(ctx, token, s.life, rng)
		switch {
		case err == nil && ok:
			return accepted
		case err == nil:
			return refused
		case ctx.Err() != nil:
			return failed
		}
		time.Sleep(s.r.d(100 * time.Millisecond))
	}
	return failed
}

// record counts what submission p got; a form's first accepted submission takes one from the
// store's stock.
func (s *submissions) record(p submission, a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case a == failed:
		s.gaveUp++
		return
	case a == accepted:
		if s.accepts[p.token]++; s.accepts[p.token] == 1 {
			stock, version := s.r.store.read(0)
			s.r.store.sell(stock, version, 0)
		}
	case p.at >= s.fault:
		s.refusedAfterFault++
	}
	s.answered++
}

// tally puts the run's submissions in res: every answered submission counts as an
// acquisition, and every form accepted more than once as that many violations.
func (s *submissions) tally(res *Result) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res.Acquisitions = s.answered
	for _, n := range s.accepts {
		res.Violations += max(n-1, 0)
	}
}

// needResubmissions fails a run whose fault nothing was tested against: no resubmission after
// it was refused, or submissions failed for good.
func (s *submissions) needResubmissions(*Result) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.gaveUp > 0:
		return fmt.Sprintf("%d submissions failed after 5 tries", s.gaveUp)
	case s.refusedAfterFault == 0:
		return "no resubmission after the fault was refused: the fault missed"
	}
	return ""
}

// A submitter takes forms: issue makes a form's token valid for life, and submit accepts a
// submission of it at most once.
type submitter interface {
	issue(ctx context.Context, token string, life time.Duration) error
	// rng draws the pauses of the submission's retries; it is the client's.
	submit(ctx context.Context, token string, life time.Duration, rng *rand.Rand) (accepted bool, err error)
}

var (
	_ submitter = redlockLocker{}
	_ submitter = (*naive)(nil)
)

// issue does nothing: this library's mark needs no token stored beforehand.
func (redlockLocker) issue(context.Context, string, time.Duration) error { return nil }

// submit takes "submit:"+token for life and orphans it. Refused because a quorum holds the mark
// (Inspect), the submission is a duplicate; refused by a split vote, it tries again after a
// random pause that doubles with every try.
func (l redlockLocker) submit(ctx context.Context, token string, life time.Duration, rng *rand.Rand) (bool, error) {
	key := "submit:" + token
	for try := 0; ; try++ {
		mark, err := l.c.TryLock(ctx, key, life)
		if err == nil {
			mark.Orphan()
			return true, nil
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
			return false, err
		}
		seen, err := l.c.Inspect(ctx, key)
		switch {
		case err == nil && seen.Held:
			return false, nil
		case try >= 20:
			return false, fmt.Errorf("simulate: no verdict on %s after %d tries: %w", key, try+1, err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(time.Millisecond) << min(try, 6))))
	}
}

func (n *naive) issue(ctx context.Context, token string, life time.Duration) error {
	return n.rdb.Set(ctx, "form:"+token, token, life).Err()
}

// submit runs seed 001's script, the compare-and-delete of the naive locks' release.
func (n *naive) submit(ctx context.Context, token string, _ time.Duration, _ *rand.Rand) (bool, error) {
	deleted, err := compareAndDelete.Run(ctx, n.rdb, []string{"form:" + token}, token).Int()
	return deleted == 1, err
}
