package main

import (
	"fmt"
	"slices"
	"strings"
)

// Case 6, gray failure, as bench/gray_test.go names it: caseGray + "/faults=" + a variant.
const (
	caseGray   = "BenchmarkGrayFailure"
	grayNone   = "none"
	grayTTL    = 1e6 // the case's ttl, in µs
	grayWindow = "4 s"
)

func caseGrayFaults(faults string) string { return caseGray + "/faults=" + faults }

// grayVariants are case 6's variants, the baseline first: the targets hold for the others.
var grayVariants = []struct{ faults, what string }{
	{grayNone, "no faults: the proxies only forward"},
	{"slow", "slow: each reply of nodes 3 and 4 held 20–80 ms"},
	{"slow+drops", "slow, and 2 % of those replies lost"},
}

// grayRounds returns the runs that measured case 6, in order: one a round.
func grayRounds(runs []results) []results {
	var out []results
	for _, r := range runs {
		for c := range r {
			if strings.HasPrefix(c, caseGray+"/") {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// A series is one figure a round; ok is false where a round lacks it.
type series struct {
	v  []float64
	ok []bool
}

// figure returns the unit of impl in a variant of case 6, round by round.
func figure(rounds []results, faults, impl, unit string) series {
	var s series
	for _, r := range rounds {
		v, ok := r.median(caseGrayFaults(faults), impl, unit) // a run has one sample
		s.v, s.ok = append(s.v, v), append(s.ok, ok)
	}
	return s
}

// over returns s divided by d round by round, lacking where either lacks it or d is 0.
func (s series) over(d series) series {
	q := series{v: make([]float64, len(s.v)), ok: make([]bool, len(s.v))}
	for i := range s.v {
		if s.ok[i] && d.ok[i] && d.v[i] != 0 {
			q.v[i], q.ok[i] = s.v[i]/d.v[i], true
		}
	}
	return q
}

// median returns the median of the rounds that have the figure, and false when none has.
func (s series) median() (float64, bool) {
	var vs []float64
	for i, ok := range s.ok {
		if ok {
			vs = append(vs, s.v[i])
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], true
	}
	return (vs[n/2-1] + vs[n/2]) / 2, true
}

// every reports whether every round has the figure (known) and meets want (met).
func (s series) every(want func(float64) bool) (met, known bool) {
	met, known = true, len(s.ok) > 0
	for i, ok := range s.ok {
		known = known && ok
		met = met && ok && want(s.v[i])
	}
	return met, known
}

// cells formats each round's figure, "n/a" where it lacks.
func (s series) cells(format func(float64) string) []string {
	out := make([]string, len(s.v))
	for i, ok := range s.ok {
		out[i] = "n/a"
		if ok {
			out[i] = format(s.v[i])
		}
	}
	return out
}

// A grayGoal is one of case 6's targets for one variant: a figure each round, and a verdict
// on them.
type grayGoal struct {
	faults, what, want string
	rounds             series
	format, median     func(float64) string // a round's figure; the median
	met, known         bool
}

// grayTargets measures the targets for this library in each faulty variant, every
// figure a ratio within one round where it compares.
func grayTargets(rounds []results) []grayGoal {
	var gs []grayGoal
	for _, v := range grayVariants[1:] {
		acq := figure(rounds, v.faults, ours, "acq/s")

		vsNone := acq.over(figure(rounds, grayNone, ours, "acq/s"))
		med, okMed := vsNone.median()
		every, okEvery := vsNone.every(func(x float64) bool { return x >= 0.25 })
		gs = append(gs, grayGoal{v.faults, "acquisitions/s vs no faults in the same round",
			"median ≥ 0.50×, every round ≥ 0.25×", vsNone, ratioTo(0.25), ratioTo(0.5),
			med >= 0.5 && every, okMed && okEvery})

		vsRedsync := acq.over(figure(rounds, v.faults, redsync, "acq/s"))
		med, okMed = vsRedsync.median()
		gs = append(gs, grayGoal{v.faults, "acquisitions/s vs redsync in the same setup and round",
			"median ≥ 1.00×", vsRedsync, ratioTo(1), ratioTo(1), med >= 1, okMed})

		gap := figure(rounds, v.faults, ours, "no-holder-max-us")
		met, known := gap.every(func(x float64) bool { return x <= 2*grayTTL })
		gs = append(gs, grayGoal{v.faults, "longest time with no holder", "≤ 2 s (2 × ttl) every round",
			gap, span, span, met, known})

		share := figure(rounds, v.faults, ours, "min-share")
		met, known = share.every(func(x float64) bool { return x >= 0.5 })
		least := func(x float64) string { return fmt.Sprintf("%.*f", decimals(x, 0.5), x) }
		gs = append(gs, grayGoal{v.faults, "every Client's share of a fair share (the least)", "≥ 0.50 every round",
			share, least, least, met, known})
	}
	return gs
}

// grayTargetsSection writes case 6's targets, a column a round.
func grayTargetsSection(b *strings.Builder, rounds []results) {
	if len(rounds) == 0 {
		return
	}
	t := tableWriter{b}
	fmt.Fprintf(b, "\n## Targets: two of five nodes slow or losing replies (case 6)\n\n")
	fmt.Fprintf(b, "The lock must keep moving when two of five nodes are slow or drop replies: ")
	fmt.Fprintf(b, "this library with 8 Clients on one key, ttl 1 s, one %s window a round; each ", grayWindow)
	fmt.Fprintf(b, "ratio is taken within one round, and shown for every round, so that one stalled round ")
	fmt.Fprintf(b, "cannot hide behind the median.\n\n")
	head := []string{"faults", "target", "wanted"}
	for i := range rounds {
		head = append(head, fmt.Sprintf("round %d", i+1))
	}
	t.header(append(head, "median", "")...)
	for _, g := range grayTargets(rounds) {
		med := "n/a"
		if m, ok := g.rounds.median(); ok {
			med = g.median(m)
		}
		verdict := goal{known: g.known, met: g.met}.verdict()
		t.row(slices.Concat([]string{g.faults, g.what, g.want}, g.rounds.cells(g.format), []string{med, verdict})...)
	}
}

// graySection writes case 6's medians and its figures round by round.
func graySection(b *strings.Builder, r results, rounds []results) {
	if len(rounds) == 0 {
		return
	}
	t := tableWriter{b}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n### 6. Gray failure: 8 clients on one key, ttl 1 s, two of five nodes slow or losing replies\n\n")
	p("`BenchmarkGrayFailure`: the contended case's 8 Clients (each over go-redis clients of its ")
	p("own) on one key for one %s window a round, with a ttl of 1 s for every library ", grayWindow)
	p("(redsync's expiry too). Nodes 3 and 4 (of 0–4) are reached through in-process proxies ")
	p("that pass requests at once and, by variant: *none*, forward replies as they come (the ")
	p("round's baseline: the same hops, no faults); *slow*, hold each chunk of replies for a ")
	p("delay drawn from 20–80 ms (seeded); *slow+drops*, also lose 2 %% of the replies, whole: a ")
	p("lost reply stalls the rest of its connection, which stays open, as a hole in a TCP stream ")
	p("would (go-redis waits its 3 s read timeout for it, and retries). The no-holder time runs ")
	p("between one holder's `Unlock` call and the next `Lock`'s return (and from the window's ")
	p("start, and to its end); the least share is the fewest acquisitions of one Client over a ")
	p("fair share (÷ 8); *under ½* counts the Clients below half a fair share; *replies lost* ")
	p("counts the replies the proxies lost, each silencing the rest of its connection: at 2 %% a ")
	p("busy connection goes quiet after about 50 replies, so this is about the number of ")
	p("connections that carried traffic to nodes 3 and 4 in the window. Ratios are taken within ")
	p("a round: × no faults against the same library's baseline, × redsync against redsync in ")
	p("the same variant.\n\n")

	libs := r.impls(caseGrayFaults(grayNone))
	ratios := func(faults, im string) (vsNone, vsRedsync series) {
		acq := figure(rounds, faults, im, "acq/s")
		return acq.over(figure(rounds, grayNone, im, "acq/s")), acq.over(figure(rounds, faults, redsync, "acq/s"))
	}
	cols := []string{"acquisitions/s", "× no faults", "× redsync", "longest with no holder", "least share",
		"under ½", "wait p50", "wait p99", "wait max", "failed Lock calls/s", "replies lost"}
	t.header(append([]string{"faults", "library"}, cols...)...)
	for _, v := range grayVariants {
		c := caseGrayFaults(v.faults)
		for _, im := range libs {
			vsNone, vsRedsync := ratios(v.faults, im)
			t.row(v.faults, im, r.cell(c, im, "acq/s", rate), medianCell(vsNone, v.faults == grayNone),
				medianCell(vsRedsync, im == redsync), r.cell(c, im, "no-holder-max-us", span),
				r.cell(c, im, "min-share", fraction), r.cell(c, im, "under-half-share", count),
				r.cell(c, im, "wait-p50-us", span), r.cell(c, im, "wait-p99-us", span), r.cell(c, im, "wait-max-us", span),
				r.cell(c, im, "failed-locks/s", rate), r.cell(c, im, "lost-replies", count))
		}
	}
	p("\nMedians over %d rounds; the ratios are medians of the rounds' ratios.\n", len(rounds))

	for _, v := range grayVariants {
		p("\n#### 6. Round by round, %s\n\n", v.what)
		t.header(append([]string{"round", "library"}, cols...)...)
		for i, run := range rounds {
			c := caseGrayFaults(v.faults)
			for _, im := range libs {
				vsNone, vsRedsync := ratios(v.faults, im)
				t.row(fmt.Sprint(i+1), im, run.cell(c, im, "acq/s", rate),
					roundCell(vsNone, i, v.faults == grayNone), roundCell(vsRedsync, i, im == redsync),
					run.cell(c, im, "no-holder-max-us", span), run.cell(c, im, "min-share", fraction),
					run.cell(c, im, "under-half-share", count), run.cell(c, im, "wait-p50-us", span),
					run.cell(c, im, "wait-p99-us", span), run.cell(c, im, "wait-max-us", span),
					run.cell(c, im, "failed-locks/s", rate), run.cell(c, im, "lost-replies", count))
			}
		}
	}
}

// medianCell formats the median of a series of ratios, "—" where the ratio is to itself.
func medianCell(s series, self bool) string {
	if self {
		return "—"
	}
	if m, ok := s.median(); ok {
		return times(m)
	}
	return "n/a"
}

// roundCell formats round i of a series of ratios, "—" where the ratio is to itself.
func roundCell(s series, i int, self bool) string {
	switch {
	case self:
		return "—"
	case !s.ok[i]:
		return "n/a"
	}
	return times(s.v[i])
}

// times formats a ratio with two decimals, or two significant figures below 0.1 (a stalled
// round's 0.002× is not 0.00×).
func times(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.2g×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// ratioTo returns a format for ratios compared with limit (at least 0.1): times, with the
// decimals that tell a ratio from the limit (see fmtRatio).
func ratioTo(limit float64) func(float64) string {
	return func(x float64) string {
		if x < 0.1 {
			return times(x)
		}
		return fmtRatio(x, limit)
	}
}

// rate formats a rate with three significant figures or more: 1.50, 12.7, 720.
func rate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// span formats microseconds as us does below a second, and in seconds above, with the decimals
// that tell it from the 2 s target.
func span(v float64) string {
	if v < 1e6 {
		return us(v)
	}
	return fmt.Sprintf("%.*f s", decimals(v/1e6, 2), v/1e6)
}
