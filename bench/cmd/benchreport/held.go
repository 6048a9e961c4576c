package main

import (
	"fmt"
	"strings"
)

// Case 3b: BenchmarkHeld, 8 clients on one key, each holding the lock for a while.
func caseHeld(hold string) string { return "BenchmarkHeld/hold=" + hold }

// holds are the times case 3b holds the lock for by default (make bench).
var holds = []string{"20ms", "100ms"}

// atLeast returns the goal median(c, ours)/median(c, peer) of unit ≥ limit, with both figures.
func atLeast(r results, what, c, peer, unit string, limit float64) goal {
	a, ok1 := r.median(c, ours, unit)
	b, ok2 := r.median(c, peer, unit)
	g := goal{what: what, want: fmt.Sprintf("≥ %.2f×", limit), got: "n/a", known: ok1 && ok2 && b > 0}
	if g.known {
		g.got, g.met = fmt.Sprintf("%s (%.0f vs %.0f)", fmtRatio(a/b, limit), a, b), a/b >= limit
	}
	return g
}

// atMost returns the goal median(c, ours)/median(c, peer) of unit ≤ limit, with both figures.
func atMost(r results, what, c, peer, unit string, limit float64) goal {
	a, ok1 := r.median(c, ours, unit)
	b, ok2 := r.median(c, peer, unit)
	g := goal{what: what, want: fmt.Sprintf("≤ %.2f×", limit), got: "n/a", known: ok1 && ok2 && b > 0}
	if g.known {
		g.got, g.met = fmt.Sprintf("%s (%.0f vs %.0f)", fmtRatio(a/b, limit), a, b), a/b <= limit
	}
	return g
}

// leastShare returns the goal that the least share of impl in case c is at least 0.8.
func leastShare(r results, what, c, impl string) goal {
	least, ok := r.median(c, impl, "min-share")
	g := goal{what: what, want: "≥ 0.80", got: "n/a", known: ok}
	if g.known {
		g.got, g.met = fmt.Sprintf("%.*f", decimals(least, 0.8), least), least >= 0.8
	}
	return g
}

// contendedTargets are the targets of cases 3 and 3b: with 8 clients on one key, acquisitions
// and Redis CPU per acquisition against redsync, and every client served.
func contendedTargets(r results) []goal {
	c := caseContended8
	gs := []goal{
		atLeast(r, "8 clients on one key: acquisitions/s vs redsync", c, redsync, "acq/s", 0.5),
		atMost(r, "8 clients on one key: Redis CPU per acquisition vs redsync", c, redsync, "redis-cpu-us/acq", 2.3),
		leastShare(r, "8 clients on one key: least share of a fair share", c, ours),
	}
	for _, w := range []struct {
		what, unit string
		limit      float64
	}{{"wait p99", "wait-p99-us", 10_000}, {"wait max", "wait-max-us", 100_000}} {
		v, ok := r.median(c, ours, w.unit)
		gs = append(gs, goal{what: "8 clients on one key: " + w.what, want: "≤ " + us(w.limit),
			got: r.cell(c, ours, w.unit, us), met: v <= w.limit, known: ok})
	}
	for _, h := range []struct {
		hold string
		cpu  float64
	}{{"20ms", 1.4}, {"100ms", 1.0}} {
		c := caseHeld(h.hold)
		what := "8 clients, each holding the lock " + h.hold + ": "
		gs = append(gs, atLeast(r, what+"acquisitions/s vs redsync", c, redsync, "acq/s", 0.95),
			atMost(r, what+"Redis CPU per acquisition vs redsync", c, redsync, "redis-cpu-us/acq", h.cpu),
			leastShare(r, what+"least share of a fair share", c, ours))
	}
	return gs
}

// heldSection writes case 3b's table, and the Redis work of cases 3 and 3b.
func heldSection(b *strings.Builder, r results) {
	t := tableWriter{b}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n### 3b. Held: 8 clients on one key, each holding the lock for a while\n\n")
	p("As case 3 with 8 clients, each holding the lock for 20 ms or 100 ms (its work) before it ")
	p("unlocks, in a window of about 50 acquisitions (at least 2 s); `go test -bench Held -args ")
	p("-holds=5ms,1s` runs other times. The Redis columns come from `INFO commandstats` and `INFO ")
	p("cpu` of the 5 servers before and after each window: the commands they ran per ")
	p("acquisition and node (a script's own calls counted too), the scripts among them, and the ")
	p("servers' CPU time per acquisition. Before each window the same clients contend for 300 ms ")
	p("on another key, so that their connections, scripts and subscriptions are made before it: ")
	p("the window counts what acquisitions cost.\n\n")
	t.header("case", "library", "acquisitions/s", "wait p50", "wait p99", "least share", "Redis calls/acq/node", "scripts/acq/node", "Redis CPU/acq")
	cases := []struct{ name, what string }{{caseContended8, "no work"}}
	for _, h := range holds {
		cases = append(cases, struct{ name, what string }{caseHeld(h), "held " + h})
	}
	for _, c := range cases {
		for _, im := range r.impls(c.name) {
			t.row(c.what, im, r.cell(c.name, im, "acq/s", count), r.cell(c.name, im, "wait-p50-us", us),
				r.cell(c.name, im, "wait-p99-us", us), r.cell(c.name, im, "min-share", fraction),
				r.cell(c.name, im, "redis-calls/acq/node", fraction), r.cell(c.name, im, "scripts/acq/node", fraction),
				r.cell(c.name, im, "redis-cpu-us/acq", us))
		}
	}
}
