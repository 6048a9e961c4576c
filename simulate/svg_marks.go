package simulate

import (
	"fmt"
	"html"
	"strings"
	"time"
	"unicode/utf8"
)

// The legend's and the fault markers' geometry, in pixels.
const (
	legendRowH = 16  // a row of the legend
	legendPad  = 10  // below the legend, above the first panel
	charW      = 6.6 // a character at font-size 11 (monospace: 0.6 em)
	markerR    = 6   // a lone fault marker's radius
	markerChar = 5.4 // a character of a marker's label (font-size 9)
)

// A mark is how a legend item is drawn.
type mark int

const (
	markNone  mark = iota // text alone
	markBar               // a filled box
	markLine              // a stroke, dashed when the item says so
	markFault             // a fault marker
)

// A legendItem is a mark and what it means.
type legendItem struct {
	mark  mark
	color string
	dash  string // markLine: stroke-dasharray
	text  string
}

// drawLegend draws items in rows across the picture's width from the top and returns the
// height it took.
func drawLegend(b *strings.Builder, items []legendItem) int {
	if len(items) == 0 {
		return 0
	}
	x, row := 4.0, 0
	for _, it := range items {
		w := 22 + charW*float64(utf8.RuneCountInString(it.text)) + 14
		if it.mark == markNone {
			w -= 22
		}
		if x > 4 && x+w > svgWidth-svgRight {
			x, row = 4, row+1
		}
		y := row*legendRowH + 14 // the text's baseline
		text := x
		switch it.mark {
		case markBar:
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="16" height="9" fill="%s"/>`, x, y-8, it.color)
		case markLine:
			fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`, x, y-4, x+16, y-4, it.color, it.dash)
		case markFault:
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%d" r="%d" fill="%s"/><text x="%.1f" y="%d" text-anchor="middle" fill="white" font-size="9">n</text>`,
				x+8, y-4, markerR, it.color, x+8, y-1)
		}
		if it.mark != markNone {
			text += 22
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`+"\n", text, y, html.EscapeString(it.text))
		x += w
	}
	return (row+1)*legendRowH + legendPad
}

// A markerGroup is faults close enough in time to share one marker: first to last, numbered
// from 1 in the run's order.
type markerGroup struct {
	first, last int
	x           float64 // the first fault's
}

// label is the group's marker text: "3", "3,4" or "3–6".
func (g markerGroup) label() string {
	switch g.last - g.first {
	case 0:
		return fmt.Sprint(g.first + 1)
	case 1:
		return fmt.Sprintf("%d,%d", g.first+1, g.last+1)
	}
	return fmt.Sprintf("%d–%d", g.first+1, g.last+1)
}

// width is the marker's width: a circle for one fault, a pill wide enough for its label.
func (g markerGroup) width() float64 {
	return max(2*markerR, markerChar*float64(utf8.RuneCountInString(g.label()))+6)
}

// groupFaults groups faults, in time order, whose markers would touch: each fault joins the
// group before it when its own marker would start within the group's.
func groupFaults(faults []Fault, x func(time.Duration) float64) []markerGroup {
	var gs []markerGroup
	for i, f := range faults {
		if n := len(gs); n > 0 {
			g := &gs[n-1]
			if x(f.At)-markerR < g.x-markerR+g.width()+2 {
				g.last = i
				continue
			}
		}
		gs = append(gs, markerGroup{first: i, last: i, x: x(f.At)})
	}
	return gs
}

// timeScale maps a time of a run that lasted span to its x across the plot.
func timeScale(span time.Duration) func(time.Duration) float64 {
	plot := svgWidth - svgLeft - svgRight
	return func(d time.Duration) float64 { return svgLeft + float64(plot)*float64(d)/float64(span) }
}

// drawTimeAxis draws the time axis of a run that lasted span, mapped by x: a line from top to
// bottom and a label below it every step, a second doubled until at most 12 steps span it.
func drawTimeAxis(b *strings.Builder, span time.Duration, x func(time.Duration) float64, top, bottom int) {
	step := time.Second
	for span/step > 12 {
		step *= 2
	}
	for t := time.Duration(0); t <= span; t += step {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eaeef2"/>`, x(t), top, x(t), bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#57606a">%gs</text>`+"\n", x(t), bottom+12, t.Seconds())
	}
}

// drawFaults draws each fault as a dashed line from the marker lane at top to bottom, with one
// marker a group of faults whose markers would otherwise sit on one another, centred at cy;
// then a line per fault below the panel, from y notes on.
func drawFaults(b *strings.Builder, faults []Fault, x func(time.Duration) float64, cy, bottom, notes int) {
	for _, f := range faults {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#bf8700" stroke-dasharray="3,2"/>`, x(f.At), cy, x(f.At), bottom)
	}
	for _, g := range groupFaults(faults, x) {
		w := g.width()
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" rx="%d" fill="#bf8700"/>`, g.x-markerR, cy-markerR, w, 2*markerR, markerR)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="white" font-size="9">%s</text>`+"\n", g.x-markerR+w/2, cy+3, g.label())
	}
	for i, f := range faults {
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#57606a">%d  t=%.2fs  %s</text>`+"\n", svgLeft, notes+i*noteH, i+1, f.At.Seconds(), html.EscapeString(f.What))
	}
}
