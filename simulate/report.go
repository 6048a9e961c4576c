package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// tableWidth is the most columns a line of WriteTable takes for the results of every scenario of
// the catalog when each observed what it expected.
const tableWidth = 100

// tableLegend explains the columns of WriteTable.
var tableLegend = []string{
	"strategy: the lock under test; redlock is this library (-list describes every scenario).",
	"expected: what the design predicts; observed: what the checker saw, comparing the critical",
	"  sections in true time: safe (none overlapped, no update lost, no fencing token went back,",
	"  the stock sold out), violation, or inconclusive (nothing wrong seen, but the stock was",
	"  not sold out in time).",
	"ok: observed is what was expected, and the scenario's own check passed; NO makes the exit",
	"  status 1; - marks a run the backend cannot reproduce (its note says why).",
	"overlaps: pairs of critical sections open at once (for a semaphore: moments with more",
	"  holders than permits; for an order form's rows: forms accepted more than once).",
	"wait (s): time to acquire, median/longest, in scenario seconds (the TTL is 10 s; real time",
	"  is that times -scale). Every figure of a run: -json.",
	"fail-over (elections): from a leader's Resign to the election of a candidate that waited,",
	"  median and longest, in scenario seconds.",
}

// WriteTable writes the results as a table for a terminal: a line saying how to rerun with the
// results' seed, a row per run, a line for each election run's fail-over times, a note for each
// run that has one, then a legend. Results of
// several seeds (-runs) are grouped by seed, each group under its own rerun line.
func WriteTable(w io.Writer, rs []Result) error {
	header := []string{"scenario", "strategy", "expected", "observed", "ok", "overlaps", "wait (s)"}
	rows := make([][]string, len(rs))
	for i, r := range rs {
		rows[i] = []string{r.Scenario, string(r.Strategy), string(r.Expected), string(r.Observed),
			okCell(r), fmt.Sprint(r.Violations), waits(r.WaitMedian, r.WaitMax)}
	}
	widths := columnWidths(append([][]string{header}, rows...))
	var b strings.Builder
	for _, group := range bySeed(rs) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		first := group[0]
		fmt.Fprintf(&b, "rerun: redlock simulate%s -seed %d -scenario NAME\n", backendFlag(rs[first].Backend), firstSeed(rs[first]))
		writeRow(&b, widths, header)
		for _, i := range group {
			writeRow(&b, widths, rows[i])
		}
		for _, i := range group {
			if r := rs[i]; r.Failovers > 0 {
				b.WriteString(wrap(fmt.Sprintf("fail-over: %s: %.3f s p50, %.3f s max (%d hand-overs)",
					r.Scenario, r.FailoverMedian.Seconds(), r.FailoverMax.Seconds(), r.Failovers), "  "))
			}
		}
	}
	for _, r := range rs {
		for _, m := range r.Missed {
			b.WriteString(wrap(fmt.Sprintf("note: %s: %s", r.Scenario, MissLine(m)), "  "))
		}
		if note := noteOf(r); note != "" {
			b.WriteString(wrap(fmt.Sprintf("note: %s, -seed %d: %s", r.Scenario, r.Seed, note), "  "))
		}
	}
	b.WriteString("\n" + strings.Join(tableLegend, "\n") + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// firstSeed is the seed a run was asked for: its own, or the first that missed its window.
func firstSeed(r Result) uint64 {
	if len(r.Missed) > 0 {
		return r.Missed[0].Seed
	}
	return r.Seed
}

// okCell is the ok column: ok, NO, or - for a run the backend could not reproduce.
func okCell(r Result) string {
	switch {
	case r.Observed == VerdictNotReproducible:
		return "-"
	case r.OK:
		return "ok"
	}
	return "NO"
}

// noteOf says why a run is not ok, or why the backend could not reproduce it.
func noteOf(r Result) string {
	switch {
	case r.Observed == VerdictNotReproducible:
		return "not reproducible on " + r.Backend + ": " + r.Note
	case !r.OK && r.Note != "":
		return r.Note
	case !r.OK:
		return fmt.Sprintf("expected %s, observed %s", r.Expected, r.Observed)
	}
	return ""
}

// waits is the wait column: the median and the longest wait in seconds, to three significant
// digits (two decimals at most), so that the column stays narrow.
func waits(median, longest time.Duration) string {
	s := func(d time.Duration) string {
		switch {
		case d < 10*time.Second:
			return fmt.Sprintf("%.2f", d.Seconds())
		case d < 100*time.Second:
			return fmt.Sprintf("%.1f", d.Seconds())
		}
		return fmt.Sprintf("%.0f", d.Seconds())
	}
	return s(median) + "/" + s(longest)
}

// backendFlag is the flag that picks backend, empty for the default.
func backendFlag(backend string) string {
	if backend == "" || backend == (Mini{}).String() {
		return ""
	}
	return " -backend " + backend
}

// bySeed returns the indices of rs grouped by the seed each was asked for, the groups in the order of their seeds and
// each in the order of rs.
func bySeed(rs []Result) [][]int {
	var seeds []uint64
	for _, r := range rs {
		if !slices.Contains(seeds, firstSeed(r)) {
			seeds = append(seeds, firstSeed(r))
		}
	}
	slices.Sort(seeds)
	groups := make([][]int, len(seeds))
	for i, r := range rs {
		g := slices.Index(seeds, firstSeed(r))
		groups[g] = append(groups[g], i)
	}
	return groups
}

// columnWidths returns the widest cell of each column, in runes.
func columnWidths(rows [][]string) []int {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	return widths
}

// writeRow writes cells padded to widths, two spaces apart: text to the left, the last two
// columns (figures) to the right.
func writeRow(b *strings.Builder, widths []int, cells []string) {
	for i, cell := range cells {
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
		if i >= len(cells)-2 {
			b.WriteString(pad + cell)
		} else {
			b.WriteString(cell + pad)
		}
		if i < len(cells)-1 {
			b.WriteString("  ")
		}
	}
	b.WriteString("\n")
}

// wrap breaks s into lines of at most tableWidth columns at spaces, the lines after the first
// starting with indent.
func wrap(s, indent string) string {
	var b strings.Builder
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > tableWidth:
			b.WriteString(line + "\n")
			line = indent + word
		default:
			line += " " + word
		}
	}
	return b.String() + line + "\n"
}

// WriteJSON writes one JSON object per result and line.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
