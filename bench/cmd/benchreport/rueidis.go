package main

import (
	"fmt"
	"strings"
)

// Case 7: BenchmarkRueidis, the libraries over rueidis clients.
const (
	oursRueidis    = "redlock-rueidis"
	redsyncRueidis = "redsync-rueidis"
	rueidislock    = "rueidislock"
)

func caseRueidis(mode string) string { return "BenchmarkRueidis/mode=" + mode }

// rueidisUncontended are case 7's uncontended modes and their titles.
var rueidisUncontended = []struct{ mode, what string }{
	{"serial", "serial"},
	{"g8", "8 goroutines"},
	{"g64", "64 goroutines"},
}

// rueidisTargets are the targets over rueidis: redlock the fastest of the three in every
// uncontended mode, and with 8 clients on one key at least half redsync's acquisitions/s and
// nine tenths of rueidislock's, every client served.
func rueidisTargets(r results) []goal {
	var gs []goal
	for _, m := range rueidisUncontended {
		c := caseRueidis(m.mode)
		g := goal{what: "over rueidis, " + m.what + ": time/op vs the faster of redsync and rueidislock", want: "≤ 1.00×", got: "n/a"}
		ours, ok := r.median(c, oursRueidis, "ns/op")
		best, okBest := fastest(r, c, "ns/op", false)
		if g.known = ok && okBest && best > 0; g.known {
			g.got, g.met = fmtRatio(ours/best, 1), ours <= best
		}
		gs = append(gs, g)
	}
	c := caseRueidis("contended")
	what := "over rueidis, 8 clients on one key: "
	return append(gs, atLeastOf(r, what+"acquisitions/s vs redsync-rueidis", c, oursRueidis, redsyncRueidis, 0.5),
		atLeastOf(r, what+"acquisitions/s vs rueidislock", c, oursRueidis, rueidislock, 0.9),
		leastShare(r, what+"least share of a fair share", c, oursRueidis))
}

// atLeastOf returns the goal median(c, a)/median(c, b) of acquisitions/s ≥ limit.
func atLeastOf(r results, what, c, a, b string, limit float64) goal {
	x, s := r.ratio(c, a, b, "acq/s")
	g := goal{what: what, want: fmt.Sprintf("≥ %.2f×", limit), got: s, known: s != "n/a"}
	if g.known {
		g.got, g.met = fmtRatio(x, limit), x >= limit
	}
	return g
}

// fastest returns the best median of unit among the two peers of case 7 (the largest when
// more is better), and false when neither has one.
func fastest(r results, c, unit string, more bool) (float64, bool) {
	var best float64
	found := false
	for _, im := range []string{redsyncRueidis, rueidislock} {
		v, ok := r.median(c, im, unit)
		if ok && (!found || more && v > best || !more && v < best) {
			best, found = v, true
		}
	}
	return best, found
}

// rueidisSection writes case 7's tables.
func rueidisSection(b *strings.Builder, r results) {
	t := tableWriter{b}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if len(r.impls(caseRueidis("serial"))) == 0 {
		return
	}
	p("\n### 7. Over rueidis clients\n\n")
	p("**redlock-rueidis**: this library over `redlockrueidis.Node` nodes (`redlock.NewNodes`) on ")
	p("the 5 servers; **redsync-rueidis**: redsync v4 over its rueidis pool on the same 5 servers; ")
	p("**rueidislock**: `rueidis/rueidislock` with `KeyMajority: 3` (5 keys, a majority of 3) on ")
	p("a cluster of 5 masters, its keys spread over them by their hash slots (its own design: ")
	p("one rueidis client). rueidis clients with rueidis's defaults, new ones for each library. ")
	p("Uncontended: a fresh key an operation.\n\n")
	t.header("mode", "library", "time/op", "allocs/op", "B/op", "p50", "p99", "time × redsync-rueidis", "time × rueidislock", "failed ops")
	for _, m := range rueidisUncontended {
		c := caseRueidis(m.mode)
		for _, im := range r.impls(c) {
			_, xs := r.ratio(c, im, redsyncRueidis, "ns/op")
			_, xl := r.ratio(c, im, rueidislock, "ns/op")
			t.row(m.what, im, r.cell(c, im, "ns/op", nsAsUS), r.cell(c, im, "allocs/op", count),
				r.cell(c, im, "B/op", count), r.cell(c, im, "p50-us", us), r.cell(c, im, "p99-us", us),
				xs, xl, r.cell(c, im, "errors/op", share))
		}
	}
	c := caseRueidis("contended")
	p("\nContended: 8 clients of the library, each over rueidis clients of its own, on one key for 2 s.\n\n")
	t.header("library", "acquisitions/s", "wait p50", "wait p99", "wait max", "least share", "failed Lock calls/s", "Redis CPU/acq")
	for _, im := range r.impls(c) {
		t.row(im, r.cell(c, im, "acq/s", count), r.cell(c, im, "wait-p50-us", us),
			r.cell(c, im, "wait-p99-us", us), r.cell(c, im, "wait-max-us", us),
			r.cell(c, im, "min-share", fraction), r.cell(c, im, "failed-locks/s", count), r.cell(c, im, "redis-cpu-us/acq", us))
	}
}
