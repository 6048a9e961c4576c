package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

var colors = map[string]string{
	floor:              "#8c8c8c",
	ours:               "#1f6fb4",
	redsync:            "#c8372d",
	"redsync-failfast": "#f0928a",
	"redislock-1node":  "#3b9a4a",
}

type bar struct {
	label, impl string
	value       float64 // in the panel's quantity: µs for times
}

// A quantity is what the values of a panel measure; every label of a panel is in one unit.
type quantity int

const (
	micros    quantity = iota // a time in µs, shown in µs, ms or s after the panel's largest
	perSecond                 // a rate, shown as a whole number
)

type panel struct {
	title string
	log   bool // log10 scale, for values that span orders of magnitude
	q     quantity
	bars  []bar
}

// labels returns the text of each bar of p, all in the unit that suits the largest value.
func (p panel) labels() []string {
	top := 0.0
	for _, b := range p.bars {
		top = max(top, b.value)
	}
	unit, div := "µs", 1.0
	switch {
	case p.q == perSecond:
		unit = ""
	case top >= 10_000_000:
		unit, div = "s", 1e6
	case top >= 10_000:
		unit, div = "ms", 1e3
	}
	out := make([]string, len(p.bars))
	for i, b := range p.bars {
		out[i] = strings.TrimSpace(significant(b.value/div) + " " + unit)
	}
	return out
}

// significant writes v with three significant digits, and no decimals from 100 up.
func significant(v float64) string {
	decimals := 0
	if v > 0 && v < 100 {
		decimals = min(3, 2-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// chart draws the main cases as small multiples: a panel a case, numbered once each, a
// horizontal bar a library, each panel on its own scale and in one unit, each bar labelled
// with its median.
func chart(r results) string {
	perImpl := func(c, unit string, scale float64) []bar {
		var bs []bar
		for _, im := range r.impls(c) {
			if v, ok := r.median(c, im, unit); ok {
				bs = append(bs, bar{im, im, v * scale})
			}
		}
		return bs
	}
	var nodes []bar
	for _, n := range []int{3, 5, 7} {
		for _, im := range r.impls(caseNodes(n)) {
			if v, ok := r.median(caseNodes(n), im, "ns/op"); ok {
				nodes = append(nodes, bar{fmt.Sprintf("%s, N = %d", im, n), im, v / 1000})
			}
		}
	}
	panels := []panel{
		{title: "Uncontended Lock+Unlock, serial: time/op (shorter is better)", bars: perImpl(caseSerial, "ns/op", 1e-3)},
		{title: "Uncontended Lock+Unlock, parallel: time/op", bars: perImpl(caseParallel, "ns/op", 1e-3)},
		{title: "One node 20 ms away: lock p99 (log scale)", log: true, bars: perImpl(caseSlow, "lock-p99-us", 1)},
		{title: "Contended, 8 clients on one key: acquisitions/s (longer is better)", q: perSecond, bars: perImpl(caseContended8, "acq/s", 1)},
		{title: "Contended, 8 clients: wait p99 (log scale)", log: true, bars: perImpl(caseContended8, "wait-p99-us", 1)},
		{title: "Serial Lock+Unlock on N nodes: time/op", bars: nodes},
	}
	panels = slices.DeleteFunc(panels, func(p panel) bool { return len(p.bars) == 0 })

	const (
		width, labelW, barW = 900, 190, 560
		barH, gap, titleH   = 16, 5, 28
	)
	var body strings.Builder
	y := 10
	for n, p := range panels {
		fmt.Fprintf(&body, "<text x=\"0\" y=\"%d\" font-weight=\"bold\">%d. %s</text>\n", y+16, n+1, html.EscapeString(p.title))
		y += titleH
		scale := linear(p.bars)
		if p.log {
			scale = logarithmic(p.bars)
		}
		labels := p.labels()
		for i, b := range p.bars {
			w := max(2, scale(b.value)*barW)
			fmt.Fprintf(&body, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", labelW-8, y+barH-3, html.EscapeString(b.label))
			fmt.Fprintf(&body, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", labelW, y, w, barH, colors[b.impl])
			fmt.Fprintf(&body, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", float64(labelW)+w+6, y+barH-3, html.EscapeString(labels[i]))
			y += barH + gap
		}
		y += 14
	}
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="white"/>
%s</svg>
`, width, y, width, y, body.String())
}

// linear maps [0, largest] onto [0, 1].
func linear(bs []bar) func(float64) float64 {
	top := 0.0
	for _, b := range bs {
		top = max(top, b.value)
	}
	return func(v float64) float64 {
		if top <= 0 {
			return 0
		}
		return v / top
	}
}

// logarithmic maps [a power of ten below the smallest, the largest] onto [0, 1] in log10.
func logarithmic(bs []bar) func(float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, b := range bs {
		if b.value > 0 {
			lo, hi = min(lo, b.value), max(hi, b.value)
		}
	}
	if hi == 0 {
		return func(float64) float64 { return 0 }
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo))-0.3)
	span := math.Log10(hi / lo)
	return func(v float64) float64 {
		if v <= lo {
			return 0
		}
		return math.Log10(v/lo) / span
	}
}
