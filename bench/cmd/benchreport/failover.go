package main

import (
	"fmt"
	"slices"
	"strings"
)

// Case 8, leader election fail-over, as bench/failover_test.go names it: caseFailover +
// "/after=" + resign or crash.
const (
	caseFailover = "BenchmarkFailover"
	etcd         = "etcd"
	// retryMax is the longest pause between two attempts of a waiting candidate: redlock's
	// default WithRetryDelay, 20 ms to 100 ms; in µs.
	retryMax = 100e3
	// resignLimit is the target for a fail-over after a resign, in µs: below the least retry
	// pause, so that the next candidate was told of the resign, not woken by its timer.
	resignLimit = 20e3
)

func caseAfter(after string) string { return caseFailover + "/after=" + after }

// failoverRounds returns the runs that measured case 8, in order: one a round.
func failoverRounds(runs []results) []results {
	var out []results
	for _, r := range runs {
		for c := range r {
			if strings.HasPrefix(c, caseFailover+"/") {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// failoverFigure returns the unit of impl in case 8 after a resign or a crash, round by round.
func failoverFigure(rounds []results, after, impl, unit string) series {
	var s series
	for _, r := range rounds {
		v, ok := r.median(caseAfter(after), impl, unit) // a run has one sample
		s.v, s.ok = append(s.v, v), append(s.ok, ok)
	}
	return s
}

// sum returns the series added round by round, lacking where any lacks it.
func sum(ss ...series) series {
	out := series{v: make([]float64, len(ss[0].v)), ok: make([]bool, len(ss[0].v))}
	for i := range out.v {
		out.ok[i] = true
		for _, s := range ss {
			out.v[i] += s.v[i]
			out.ok[i] = out.ok[i] && s.ok[i]
		}
	}
	return out
}

// A roundGoal is a target measured round by round: a figure each round, and a verdict on them.
type roundGoal struct {
	what, want string
	rounds     series
	format     func(float64) string
	met, known bool
}

// failoverTargets are the issue's targets for this library: "fail-over after a resign in
// milliseconds, after a crash within the ttl plus the retry delay", and one leader at a time.
func failoverTargets(rounds []results) []roundGoal {
	var gs []roundGoal
	p99 := failoverFigure(rounds, "resign", ours, "failover-p99-us")
	met, known := p99.every(func(x float64) bool { return x <= resignLimit })
	gs = append(gs, roundGoal{"after a resign: fail-over p99",
		fmt.Sprintf("≤ %s every round (the least retry pause: the next leader was told)", us(resignLimit)),
		p99, us, met, known})

	slowest := failoverFigure(rounds, "crash", ours, "failover-max-us")
	ttl := failoverFigure(rounds, "crash", ours, "ttl-s")
	bound := series{v: make([]float64, len(ttl.v)), ok: ttl.ok}
	for i, t := range ttl.v {
		bound.v[i] = t*1e6 + retryMax
	}
	room := slowest.over(bound) // ≤ 1 within the bound
	met, known = room.every(func(x float64) bool { return x <= 1 })
	want := "≤ the ttl + 100 ms every round"
	if b, ok := bound.median(); ok {
		want = fmt.Sprintf("≤ %s (the ttl + 100 ms) every round", seconds(b))
	}
	gs = append(gs, roundGoal{"after a crash: the slowest fail-over", want, slowest, seconds, met, known})

	twice := sum(failoverFigure(rounds, "resign", ours, "two-leaders"), failoverFigure(rounds, "crash", ours, "two-leaders"),
		failoverFigure(rounds, "resign", ours, "terms-backward"), failoverFigure(rounds, "crash", ours, "terms-backward"),
		failoverFigure(rounds, "crash", ours, "early"))
	met, known = twice.every(func(x float64) bool { return x == 0 })
	gs = append(gs, roundGoal{"one leader at a time: elections while another led or before its term's validity ended, terms not above the last",
		"0 every round", twice, count, met, known})
	return gs
}

// failoverTargetsSection writes case 8's targets, a column a round.
func failoverTargetsSection(b *strings.Builder, rounds []results) {
	if len(rounds) == 0 {
		return
	}
	t := tableWriter{b}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n## Targets: leader election fail-over (case 8)\n\n")
	p("The targets: fail-over after a resign in milliseconds, after a crash ")
	p("within the ttl plus the retry delay, for this library's `Election` with 3 candidates; ")
	p("each round's figure is shown, so that one slow round cannot hide behind the median.\n\n")
	head := []string{"target", "wanted"}
	for i := range rounds {
		head = append(head, fmt.Sprintf("round %d", i+1))
	}
	t.header(append(head, "median", "")...)
	for _, g := range failoverTargets(rounds) {
		med := "n/a"
		if m, ok := g.rounds.median(); ok {
			med = g.format(m)
		}
		verdict := goal{known: g.known, met: g.met}.verdict()
		t.row(slices.Concat([]string{g.what, g.want}, g.rounds.cells(g.format), []string{med, verdict})...)
	}
}

// failoverSection writes case 8's medians and its figures round by round.
func failoverSection(b *strings.Builder, r results, rounds []results) {
	if len(rounds) == 0 {
		return
	}
	t := tableWriter{b}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n### 8. Leader election: fail-over after a resign and after a crash, 3 candidates\n\n")
	p("`BenchmarkFailover`: 3 candidates, each over clients of its own as 3 processes would be, ")
	p("stand in one election. **redlock**: this library's `Election` (`Campaign`, `Term.Resign`) ")
	p("with its defaults on the 5 redis-servers. **etcd**: `go.etcd.io/etcd/client/v3/concurrency` ")
	p("(a `Session` each, `Election.Campaign`, `Resign`) on a cluster of 3 etcd members on ")
	p("loopback, data on tmpfs (the redis-servers persist nothing either), heartbeat 50 ms and ")
	p("election timeout 500 ms, so that etcd grants the crash case's 1 s lease as asked (with its ")
	p("defaults no lease is shorter than 2 s).\n\n")
	p("- **after a resign** (ttl 10 s): the leader resigns 5 ms after its election and stands ")
	p("again, at the end of the line; 200 fail-overs a round. A resign hands the leadership on ")
	p("at once, so the ttl must not show: a fail-over that waited for the term to expire would ")
	p("take 10 s.\n")
	p("- **after a crash** (ttl 1 s): the leader crashes 10 ms after its election and a new ")
	p("candidate takes its place in line; 5 fail-overs a round. A crash closes the crashed ")
	p("candidate's connections (its go-redis clients, or its etcd client) and nothing more: ")
	p("no release, so the term's key, or the session's lease, is left to expire. Expected ")
	p("within the ttl plus redlock's retry delay (20–100 ms), since no one announces an expiry ")
	p("and the candidates in line try again on their timers; etcd finds expired leases every ")
	p("500 ms.\n\n")
	p("The fail-over runs from the start of the leader's `Resign`, or its crash, to the return of ")
	p("the next leader's `Campaign`. *Fail-overs/s* counts them over the time from the first ")
	p("election to the last fail-over, the holds included. *Past the validity*: from the end of ")
	p("the crashed term's validity (`Term.Until`) to the next leader (etcd does not tell a ")
	p("lease's end). *Two leaders* counts elections while another candidate led, or before the ")
	p("crashed term's validity ended, and terms not above the one before: 0 is the only right ")
	p("figure.\n\n")

	cols := []string{"fail-over p50", "p99", "max", "fail-overs/s", "past the validity (min–max)", "two leaders", "failed calls", "ttl"}
	cells := func(res results, after, im string) []string {
		c := caseAfter(after)
		if _, ok := res.median(c, im, "failover-p50-us"); !ok {
			return slices.Repeat([]string{"n/a"}, len(cols))
		}
		past := "n/a"
		if lo, ok := res.median(c, im, "past-validity-min-us"); ok {
			hi, _ := res.median(c, im, "past-validity-max-us")
			past = us(lo) + " – " + us(hi)
		}
		twice := 0.0
		for _, unit := range []string{"two-leaders", "terms-backward", "early"} {
			v, _ := res.median(c, im, unit)
			twice += v
		}
		failed := 0.0
		for _, unit := range []string{"failed-campaigns", "failed-resigns"} {
			v, _ := res.median(c, im, unit)
			failed += v
		}
		return []string{res.cell(c, im, "failover-p50-us", dur), res.cell(c, im, "failover-p99-us", dur),
			res.cell(c, im, "failover-max-us", dur), res.cell(c, im, "failovers/s", rate), past,
			count(twice), count(failed), res.cell(c, im, "ttl-s", func(v float64) string { return fmt.Sprintf("%g s", v) })}
	}
	t.header(append([]string{"after", "library"}, cols...)...)
	for _, after := range []string{"resign", "crash"} {
		for _, im := range r.impls(caseAfter(after)) {
			t.row(append([]string{after, im}, cells(r, after, im)...)...)
		}
	}
	p("\nMedians over %d rounds.\n", len(rounds))

	p("\n#### 8. Round by round\n\n")
	t.header(append([]string{"round", "after", "library"}, cols...)...)
	for _, after := range []string{"resign", "crash"} {
		for i, run := range rounds {
			for _, im := range r.impls(caseAfter(after)) {
				t.row(append([]string{fmt.Sprint(i + 1), after, im}, cells(run, after, im)...)...)
			}
		}
	}
}

// dur formats microseconds as us does below a second, and in seconds with three decimals above.
func dur(v float64) string {
	if v < 1e6 {
		return us(v)
	}
	return seconds(v)
}

// seconds formats microseconds in seconds with three decimals: 1.058 s.
func seconds(v float64) string { return fmt.Sprintf("%.3f s", v/1e6) }
