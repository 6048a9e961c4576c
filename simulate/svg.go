package simulate

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"
)

// The timeline's geometry, in pixels.
const (
	svgWidth  = 960
	svgLeft   = 70 // room for lane names
	svgRight  = 20 // room after the last tick
	laneH     = 22 // one client
	faultH    = 16 // the lane of fault markers
	panelHead = 26 // the panel's title
	noteH     = 14 // one line of the list of faults
	panelGap  = 18 // between panels
)

// WriteSVG draws each result as a panel: a lane per client with its holdings (light: from
// acquiring to releasing; dark: from reading the stock to writing it), the faults as numbered
// markers, and the overlapping critical sections in red, under a legend of these.
func WriteSVG(w io.Writer, rs []Result) error {
	return picture{legend: timelineLegend, height: panelHeight, draw: panel}.write(w, rs)
}

// timelineLegend explains the marks of the timeline.
var timelineLegend = []legendItem{
	{mark: markBar, color: "#b6e3ff", text: "holds the lock (acquired to released)"},
	{mark: markBar, color: "#0969da", text: "critical section (stock read to written)"},
	{mark: markBar, color: "#8c959f", text: "section given up (validity used up)"},
	{mark: markBar, color: "#cf222e", text: "overlap: two held at once"},
	{mark: markFault, color: "#bf8700", text: "fault n, listed under its panel"},
	{mark: markNone, text: "times in scenario seconds (TTL 10 s)"},
}

// A picture is one of the simulator's SVG documents: a legend, then a panel per result, stacked,
// each height(r) high and drawn by draw at its top y; with no results it says empty.
type picture struct {
	legend []legendItem
	height func(Result) int
	draw   func(b *strings.Builder, r Result, y int)
	empty  string
}

func (p picture) write(w io.Writer, rs []Result) error {
	var legend strings.Builder
	y := drawLegend(&legend, p.legend)
	total := y
	for _, r := range rs {
		total += p.height(r) + panelGap
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">`+"\n", svgWidth, max(total, y+40))
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	b.WriteString(legend.String())
	if len(rs) == 0 && p.empty != "" {
		fmt.Fprintf(&b, `<text x="8" y="%d">%s</text>`+"\n", y+24, p.empty)
	}
	for _, r := range rs {
		p.draw(&b, r, y)
		y += p.height(r) + panelGap
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func panelHeight(r Result) int {
	return panelHead + faultH + r.Clients*laneH + 20 + len(r.Faults)*noteH
}

func panel(b *strings.Builder, r Result, y int) {
	span := r.Elapsed
	for _, s := range r.Sections {
		span = max(span, s.Released)
	}
	span = max(span, time.Second)
	x := timeScale(span)
	width := func(a, z time.Duration) float64 { return max(1.5, x(z)-x(a)) }

	color := "#1a7f37"
	if r.Observed != VerdictSafe {
		color = "#cf222e"
	}
	fmt.Fprintf(b, `<text x="4" y="%d" font-size="13" font-weight="bold">%s</text>`, y+16, html.EscapeString(r.Scenario))
	fmt.Fprintf(b, `<text x="%d" y="%d">%s, seed %d: expected %s, observed <tspan fill="%s">%s</tspan>, %d violations, %d acquisitions</text>`+"\n",
		svgLeft+200, y+16, r.Strategy, r.Seed, r.Expected, color, r.Observed, r.Violations, r.Acquisitions)

	top := y + panelHead
	lanes := top + faultH
	bottom := lanes + r.Clients*laneH
	fmt.Fprintf(b, `<text x="4" y="%d" fill="#9a6700">faults</text>`+"\n", top+11)
	for i := range r.Clients {
		ly := lanes + i*laneH
		fmt.Fprintf(b, `<text x="4" y="%d">client %d</text>`, ly+15, i+1)
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d0d7de"/>`+"\n", svgLeft, ly+laneH/2, svgWidth-svgRight, ly+laneH/2)
	}
	drawTimeAxis(b, span, x, top, bottom)
	for _, s := range r.Sections {
		ly := lanes + s.Client*laneH
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#b6e3ff"><title>client %d held %.3fs to %.3fs</title></rect>`,
			x(s.Acquired), ly+4, width(s.Acquired, s.Released), laneH-8, s.Client+1, s.Acquired.Seconds(), s.Released.Seconds())
		fill := "#0969da"
		if s.Aborted {
			fill = "#8c959f"
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x(s.Enter), ly+6, width(s.Enter, s.Exit), laneH-12, fill)
	}
	for _, o := range r.Overlaps {
		for _, i := range []int{o.A, o.B} {
			s := r.Sections[i]
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#cf222e" fill-opacity="0.8"><title>overlap %.3fs to %.3fs</title></rect>`+"\n",
				x(o.From), lanes+s.Client*laneH+3, width(o.From, o.To), laneH-6, o.From.Seconds(), o.To.Seconds())
		}
	}
	drawFaults(b, r.Faults, x, top+8, bottom, bottom+28)
}
