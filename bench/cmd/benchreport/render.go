package main

import (
	"fmt"
	"strings"
)

// The cases as bench_test.go names them.
const (
	caseSerial     = "BenchmarkUncontended/mode=serial"
	caseParallel   = "BenchmarkUncontended/mode=parallel"
	caseG8         = "BenchmarkUncontended/mode=g8"
	caseG64        = "BenchmarkUncontended/mode=g64"
	caseSlow       = "BenchmarkSlowNode"
	caseContended  = "BenchmarkContended/clients=1" // one process
	caseContended8 = "BenchmarkContended/clients=8" // eight processes: the targets' case
)

func caseNodes(n int) string { return fmt.Sprintf("BenchmarkNodes/n=%d", n) }

// caseCluster names BenchmarkCluster's case for a topology: servers, clusters or votes.
func caseCluster(topo string) string { return "BenchmarkCluster/nodes=" + topo }

const (
	floor   = "floor"
	ours    = "redlock"
	redsync = "redsync"
)

var implOrder = []string{floor, ours, redsync, "redsync-failfast", "redislock-1node", oursRueidis, redsyncRueidis, rueidislock, etcd}

// impls returns the impls the case has results for, in the page's order.
func (r results) impls(c string) []string {
	var out []string
	for _, im := range implOrder {
		if _, ok := r[c][im]; ok {
			out = append(out, im)
		}
	}
	return out
}

// cell formats the median of a unit, "n/a" when there is none.
func (r results) cell(c, impl, unit string, format func(float64) string) string {
	v, ok := r.median(c, impl, unit)
	if !ok {
		return "n/a"
	}
	return format(v)
}

// ratio formats median(c, a)/median(c, b) of a unit.
func (r results) ratio(c, a, b, unit string) (float64, string) { return r.div(c, a, c, b, unit) }

// div formats median(c1, a)/median(c2, b) of a unit, "n/a" when either is missing.
func (r results) div(c1, a, c2, b, unit string) (float64, string) {
	x, ok1 := r.median(c1, a, unit)
	y, ok2 := r.median(c2, b, unit)
	if !ok1 || !ok2 || y == 0 {
		return 0, "n/a"
	}
	return x / y, fmt.Sprintf("%.2f×", x/y)
}

// us formats microseconds, switching to ms and s where that reads better.
func us(v float64) string {
	switch {
	case v < 10_000:
		return fmt.Sprintf("%.0f µs", v)
	case v < 10_000_000:
		return fmt.Sprintf("%.1f ms", v/1000)
	default:
		return fmt.Sprintf("%.2f s", v/1e6)
	}
}

func nsAsUS(v float64) string   { return us(v / 1000) }
func count(v float64) string    { return fmt.Sprintf("%.0f", v) }
func share(v float64) string    { return fmt.Sprintf("%.2g%%", 100*v) }
func fraction(v float64) string { return fmt.Sprintf("%.2f", v) }

type tableWriter struct{ b *strings.Builder }

func (t tableWriter) row(cells ...string) {
	t.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func (t tableWriter) header(cells ...string) {
	t.row(cells...)
	sep := make([]string, len(cells))
	for i := range sep {
		sep[i] = "---"
	}
	t.row(sep...)
}

// render writes the page from every sample (r) and the samples of each run of the test
// binary apart (runs), which cases 6 and 8 show round by round.
func render(r results, runs []results, machine, stat, limits, svg string) string {
	var b strings.Builder
	t := tableWriter{&b}
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Benchmarks\n\n")
	p("Written by `make bench` (`bench/run.sh`, then `bench/cmd/benchreport`) from one real run; ")
	p("edit `bench/limits.md` or the generator, not this page. Every figure is the median over ")
	p("the rounds of that run; the rounds interleave every case and library, so that noise on ")
	p("the shared machine falls on all of them alike. The raw output is in ")
	p("[`results/raw.txt`](results/raw.txt), benchstat's summary at the end of this page.\n\n")

	p("## Machine and versions\n\n")
	t.header("", "")
	for line := range strings.Lines(machine) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok {
			t.row(k, "`"+v+"`")
		}
	}

	p("\n## What runs\n\n")
	p("Five (three, five, seven for case 4) local `redis-server` processes on loopback ports, ")
	p("started by the benchmark; go-redis v9 clients with go-redis's defaults, new ones for each ")
	p("library; a TTL of 8 s (redsync's default) everywhere but in cases 6 and 8 (their own); a fresh key for ")
	p("every operation of the uncontended cases (made before the timer starts), one key for the ")
	p("whole window of the contended cases.\n\n")
	p("- **floor**: the least work any go-redis Redlock must do, written in `bench/floor_test.go`: ")
	p("`SET NX PX` to every node at once (a goroutine each), a decision at the first majority, ")
	p("`EVALSHA` compare-and-delete on the nodes taken (late ones once their reply comes). No ")
	p("per-node timeout, no retries, no error detail.\n")
	p("- **redlock**: this library with its default options (`redlock.New(nodes)`), `Lock` and `Unlock`.\n")
	p("- **redsync**: go-redsync/redsync v4 over its go-redis v9 pool, default options; ")
	p("**redsync-failfast** adds `WithFailFast(true)` (return at a majority).\n")
	p("- **redislock-1node**: bsm/redislock on one node, for scale: what a single-node lock costs.\n\n")
	p("Latency percentiles come from each operation's duration, recorded in a slice allocated ")
	p("before the timer starts. Allocations count the whole process during the timed loop, so ")
	p("they include go-redis's own; in case 2 they also include the in-process delay proxy's ")
	p("buffers for connections that go-redis opens during the run.\n\n")

	p("## Targets\n\n")
	p("The targets, each a ratio of medians of this run (or a median, for the waits and ")
	p("the share); a figure is printed with more than two decimals only when two would hide its verdict.\n\n")
	t.header("target", "wanted", "measured", "")
	for _, g := range targets(r) {
		t.row(g.what, g.want, g.got, g.verdict())
	}
	acq1, s1 := r.ratio(caseContended, ours, redsync, "acq/s")
	if s1 != "n/a" {
		p("\nNot a target: with one client shared by the 8 goroutines, redlock takes the key ")
		p("%s as often as redsync (%s against %s acquisitions/s).\n", fmtRatio(acq1, 1),
			r.cell(caseContended, ours, "acq/s", count), r.cell(caseContended, redsync, "acq/s", count))
	}

	grays := grayRounds(runs)
	grayTargetsSection(&b, grays)
	failovers := failoverRounds(runs)
	failoverTargetsSection(&b, failovers)

	p("\n## Chart\n\n![medians of the main cases](%s)\n\n", svg)

	p("## Medians\n\n")
	for _, c := range []struct{ name, title string }{
		{caseSerial, "1. Uncontended Lock+Unlock, serial, 5 nodes"},
		{caseParallel, "1. Uncontended Lock+Unlock, parallel (RunParallel, GOMAXPROCS goroutines), 5 nodes"},
		{caseG8, "1. Uncontended Lock+Unlock under load, 8 goroutines, 5 nodes"},
		{caseG64, "1. Uncontended Lock+Unlock under load, 64 goroutines, 5 nodes"},
	} {
		p("### %s\n\n", c.title)
		t.header("library", "time/op", "allocs/op", "B/op", "p50", "p99", "time × floor", "time × redsync", "failed ops", "rounds")
		for _, im := range r.impls(c.name) {
			_, xf := r.ratio(c.name, im, floor, "ns/op")
			_, xr := r.ratio(c.name, im, redsync, "ns/op")
			t.row(im, r.cell(c.name, im, "ns/op", nsAsUS), r.cell(c.name, im, "allocs/op", count),
				r.cell(c.name, im, "B/op", count), r.cell(c.name, im, "p50-us", us),
				r.cell(c.name, im, "p99-us", us), xf, xr, r.cell(c.name, im, "errors/op", share),
				fmt.Sprint(r.rounds(c.name, im)))
		}
		p("\n")
	}

	p("### 2. One node 20 ms away each direction (5 nodes, node 0 behind the delay proxy)\n\n")
	t.header("library", "lock p50", "lock p99", "unlock p50", "unlock p99", "time/op",
		"lock p50 × floor", "lock p99 × floor", "allocs/op", "failed ops")
	for _, im := range r.impls(caseSlow) {
		_, x50 := r.ratio(caseSlow, im, floor, "lock-p50-us")
		_, x99 := r.ratio(caseSlow, im, floor, "lock-p99-us")
		t.row(im, r.cell(caseSlow, im, "lock-p50-us", us), r.cell(caseSlow, im, "lock-p99-us", us),
			r.cell(caseSlow, im, "unlock-p50-us", us), r.cell(caseSlow, im, "unlock-p99-us", us),
			r.cell(caseSlow, im, "ns/op", nsAsUS), x50, x99, r.cell(caseSlow, im, "allocs/op", count),
			r.cell(caseSlow, im, "errors/op", share))
	}

	p("\n### 3. Contended: 8 goroutines on one key for 2 s, locking again at once after each release\n\n")
	p("The wait runs from wanting the lock to holding it, across failed `Lock` calls; its max ")
	p("includes waits that the end of the window cut short. *One client*: the 8 goroutines share ")
	p("one client of the library, as in one process; *8 clients*: each has its own, over its own ")
	p("go-redis clients, as 8 processes would (the targets' case). The least share is the fewest ")
	p("acquisitions of one contender divided by a fair share (all acquisitions ÷ 8): 1 when they ")
	p("took turns evenly, 0 when one starved. With 8 clients a contender is a client; with one ")
	p("client, whose share is always 1, it is one of its goroutines.\n\n")
	t.header("library", "clients", "acquisitions/s", "wait p50", "wait p99", "wait max", "least share", "failed Lock calls/s")
	for _, c := range []struct{ name, clients string }{{caseContended, "1"}, {caseContended8, "8"}} {
		for _, im := range r.impls(c.name) {
			t.row(im, c.clients, r.cell(c.name, im, "acq/s", count), r.cell(c.name, im, "wait-p50-us", us),
				r.cell(c.name, im, "wait-p99-us", us), r.cell(c.name, im, "wait-max-us", us),
				r.cell(c.name, im, "min-share", fraction), r.cell(c.name, im, "failed-locks/s", count))
		}
	}

	heldSection(&b, r)

	p("\n### 4. Uncontended serial Lock+Unlock on N nodes\n\n")
	t.header("library", "N = 3", "N = 5", "N = 7", "N = 7 ÷ N = 3", "allocs/op N = 3", "allocs/op N = 7")
	for _, im := range r.impls(caseNodes(3)) {
		v3, ok3 := r.median(caseNodes(3), im, "ns/op")
		v7, ok7 := r.median(caseNodes(7), im, "ns/op")
		grow := "n/a"
		if ok3 && ok7 {
			grow = fmt.Sprintf("%.2f×", v7/v3)
		}
		t.row(im, r.cell(caseNodes(3), im, "ns/op", nsAsUS), r.cell(caseNodes(5), im, "ns/op", nsAsUS),
			r.cell(caseNodes(7), im, "ns/op", nsAsUS), grow,
			r.cell(caseNodes(3), im, "allocs/op", count), r.cell(caseNodes(7), im, "allocs/op", count))
	}

	p("\n### 5. Redis Cluster: uncontended serial Lock+Unlock, 3 votes\n\n")
	t.header("nodes", "library", "time/op", "allocs/op", "B/op", "p50", "p99", "time × the same library on 3 servers")
	for _, c := range []struct{ topo, what string }{
		{"servers", "3 plain servers"},
		{"clusters", "3 clusters of one master, each a *redis.ClusterClient"},
		{"votes", "NewCluster: 3 votes on one cluster of 3 masters"},
	} {
		name := caseCluster(c.topo)
		for _, im := range r.impls(name) {
			_, x := r.div(name, im, caseCluster("servers"), im, "ns/op")
			t.row(c.what, im, r.cell(name, im, "ns/op", nsAsUS), r.cell(name, im, "allocs/op", count),
				r.cell(name, im, "B/op", count), r.cell(name, im, "p50-us", us), r.cell(name, im, "p99-us", us), x)
		}
	}

	graySection(&b, r, grays)
	rueidisSection(&b, r)
	failoverSection(&b, r, failovers)

	if limits != "" {
		p("\n## What limits it\n\n%s", limits)
		if !strings.HasSuffix(limits, "\n") {
			p("\n")
		}
	}
	p("\n## benchstat\n\n`benchstat -col /impl` over every round (columns compared with the floor):\n\n")
	p("```\n%s```\n", stat)
	return b.String()
}

// A goal is one of issue 11's targets, measured.
type goal struct {
	what, want, got string
	met, known      bool
}

func (g goal) verdict() string {
	switch {
	case !g.known:
		return "no data"
	case g.met:
		return "met"
	default:
		return "**missed**"
	}
}

// decimals is how many decimals tell ratio x from the limit it is compared with: two, or more
// when two would read as the limit (1.052× against ≤ 1.05×, which it misses).
func decimals(x, limit float64) int {
	d := 2
	for d < 6 && x != limit && fmt.Sprintf("%.*f", d, x) == fmt.Sprintf("%.*f", d, limit) {
		d++
	}
	return d
}

// fmtRatio formats ratio x with the decimals that tell it from limit.
func fmtRatio(x, limit float64) string { return fmt.Sprintf("%.*f×", decimals(x, limit), x) }

func targets(r results) []goal {
	var gs []goal
	// ratio adds the goal median(c, a)/median(c, b) of unit ≤ limit, or < limit when strict.
	ratio := func(what, c, a, b, unit string, limit float64, strict bool) {
		x, s := r.ratio(c, a, b, unit)
		g := goal{what: what, want: fmt.Sprintf("≤ %.2f×", limit), got: s, met: x <= limit, known: s != "n/a"}
		if strict {
			g.want, g.met = fmt.Sprintf("< %.2f×", limit), x < limit
		}
		if g.known {
			g.got = fmtRatio(x, limit)
		}
		gs = append(gs, g)
	}
	ratio("uncontended serial: time/op vs the floor", caseSerial, ours, floor, "ns/op", 1.05, false)
	ratio("uncontended serial: allocs/op vs the floor", caseSerial, ours, floor, "allocs/op", 1.0, false)
	ratio("uncontended serial: B/op vs the floor", caseSerial, ours, floor, "B/op", 1.2, false)
	ratio("uncontended serial: time/op vs redsync-failfast", caseSerial, ours, "redsync-failfast", "ns/op", 1.0, true)
	ratio("under load, 8 goroutines: time/op vs the floor", caseG8, ours, floor, "ns/op", 0.9, false)
	ratio("under load, 64 goroutines: time/op vs the floor", caseG64, ours, floor, "ns/op", 0.67, false)
	ratio("under load, 64 goroutines: time/op vs redsync", caseG64, ours, redsync, "ns/op", 0.5, false)
	ratio("one slow node: lock p50 vs the floor", caseSlow, ours, floor, "lock-p50-us", 1.3, false)
	ratio("one slow node: lock p99 vs the floor", caseSlow, ours, floor, "lock-p99-us", 1.3, false)

	gs = append(gs, contendedTargets(r)...)

	grow := func(im string) (float64, bool) {
		v3, ok3 := r.median(caseNodes(3), im, "ns/op")
		v7, ok7 := r.median(caseNodes(7), im, "ns/op")
		return v7 / v3, ok3 && ok7 && v3 > 0
	}
	x, okOurs := grow(ours)
	y, okFloor := grow(floor)
	g := goal{what: "N = 7 vs N = 3 (time/op)", want: "≤ the floor's", got: "n/a", known: okOurs && okFloor}
	if g.known {
		d := decimals(x, y)
		g.got = fmt.Sprintf("%.*f× (floor %.*f×)", d, x, d, y)
		g.met = x <= y
	}
	return append(append(gs, g), rueidisTargets(r)...)
}
