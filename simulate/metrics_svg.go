package simulate

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// The metrics chart's geometry, in pixels, beside the timeline's (svgWidth, svgLeft, svgRight).
const (
	chartPlotH  = 150 // the percentiles, on a log scale
	chartCountH = 32  // calls returned per window; calls waiting
	chartGap    = 8   // above the percentiles, and between them and the counts
	chartFoot   = 18  // the time axis
	chartWindow = 40  // windows across a panel
)

// The percentiles drawn, in this order (p90 dashed over p99: with few calls a window they meet).
var chartLines = []struct {
	q     float64
	name  string
	color string
	dash  string
}{{0.99, "p99", "#cf222e", ""}, {0.9, "p90", "#bf8700", "4,3"}, {0.5, "p50", "#0969da", ""}}

// WriteMetricsSVG draws, for each result with acquiring calls (Options.Metrics), what an
// operator's dashboard shows over the run: the p50, p90 and p99 of redlock.acquire.duration of
// the calls that returned in each of 40 windows, on a log scale; below, how many returned in
// each window, and the redlock.waiting gauge (its highest value in the window); the faults as
// numbered markers; a legend above them all. Results without calls (the strategies other than
// this library's) are left out.
func WriteMetricsSVG(w io.Writer, rs []Result) error {
	rs = slices.DeleteFunc(slices.Clone(rs), func(r Result) bool { return r.Metrics == nil || len(r.Metrics.Calls) == 0 })
	return picture{legend: metricsLegend, height: chartHeight, draw: chart, empty: "no acquiring calls: no run used this library's lock"}.write(w, rs)
}

// metricsLegend explains the marks of the metrics chart.
var metricsLegend = func() []legendItem {
	var items []legendItem
	for _, l := range slices.Backward(chartLines) {
		items = append(items, legendItem{mark: markLine, color: l.color, dash: l.dash, text: l.name})
	}
	return append(items,
		legendItem{mark: markNone, text: "of redlock.acquire.duration: calls returned in each window (log scale)"},
		legendItem{mark: markBar, color: "#d0d7de", text: "calls returned in the window"},
		legendItem{mark: markBar, color: "#d8b9ff", text: "calls waiting (redlock.waiting, highest in the window)"},
		legendItem{mark: markFault, color: "#bf8700", text: "fault n, listed under its panel"},
		legendItem{mark: markNone, text: "times in scenario seconds (TTL 10 s)"},
	)
}()

func chartHeight(r Result) int {
	return panelHead + faultH + chartGap + chartPlotH + chartGap + 2*chartCountH + chartFoot + len(r.Faults)*noteH
}

// percentile returns the q-quantile of sorted ds by the nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func chart(b *strings.Builder, r Result, y int) {
	calls := r.Metrics.Calls
	span := max(r.Elapsed, time.Second)
	for _, c := range calls {
		span = max(span, c.At)
	}
	step := span / chartWindow
	windows := make([][]time.Duration, chartWindow)
	longest := time.Duration(0)
	for _, c := range calls {
		i := min(int(c.At/step), chartWindow-1)
		windows[i] = append(windows[i], c.Took)
		longest = max(longest, c.Took)
	}
	most := 1
	for _, w := range windows {
		slices.Sort(w)
		most = max(most, len(w))
	}
	// The gauge's highest value in each window, carried from the last change before it.
	waiting := make([]int, chartWindow)
	now, next := 0, 0
	for i := range waiting {
		end := time.Duration(i+1) * step
		waiting[i] = now
		for ; next < len(r.Metrics.Waiting) && (r.Metrics.Waiting[next].At < end || i == chartWindow-1); next++ {
			now = r.Metrics.Waiting[next].N
			waiting[i] = max(waiting[i], now)
		}
	}
	mostWaiting := max(1, slices.Max(waiting))

	x := timeScale(span)
	// The y axis: decades from 1 ms to the one above the longest call.
	lo, hi := -3.0, math.Max(-2, math.Ceil(math.Log10(max(longest, time.Millisecond).Seconds())))
	lane := y + panelHead // the faults' markers
	top := lane + faultH + chartGap
	yOf := func(d time.Duration) float64 {
		v := math.Log10(math.Max(d.Seconds(), 1e-3))
		return float64(top+chartPlotH) - float64(chartPlotH)*(v-lo)/(hi-lo)
	}

	fmt.Fprintf(b, `<text x="4" y="%d" font-size="13" font-weight="bold">%s</text>`, y+16, html.EscapeString(r.Scenario))
	fmt.Fprintf(b, `<text x="%d" y="%d">%s, seed %d: %d acquiring calls, windows of %.2fs</text>`+"\n",
		svgLeft+200, y+16, r.Strategy, r.Seed, len(calls), step.Seconds())
	fmt.Fprintf(b, `<text x="4" y="%d" fill="#9a6700">faults</text>`+"\n", lane+11)

	for e := lo; e <= hi; e++ {
		d := time.Duration(math.Pow(10, e) * float64(time.Second))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eaeef2"/>`, svgLeft, yOf(d), svgWidth-svgRight, yOf(d))
		label := fmt.Sprintf("%gs", d.Seconds())
		if d < time.Second {
			label = fmt.Sprintf("%gms", float64(d)/float64(time.Millisecond))
		}
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#57606a">%s</text>`+"\n", svgLeft-4, yOf(d)+4, label)
	}
	counts := top + chartPlotH + chartGap
	gauge := counts + chartCountH
	bottom := gauge + chartCountH
	drawTimeAxis(b, span, x, top, bottom)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" fill="#57606a">returned</text><text x="%d" y="%d" text-anchor="end" fill="#57606a">≤%d</text>`,
		svgLeft-4, gauge-14, svgLeft-4, gauge-2, most)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" fill="#8250df">waiting</text><text x="%d" y="%d" text-anchor="end" fill="#8250df">≤%d</text>`+"\n",
		svgLeft-4, bottom-14, svgLeft-4, bottom-2, mostWaiting)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d0d7de"/>`, svgLeft, gauge, svgWidth-svgRight, gauge)
	for i, w := range windows {
		left, width := x(time.Duration(i)*step)+1, x(step)-x(0)-2
		if h := float64(chartCountH-4) * float64(len(w)) / float64(most); h > 0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d0d7de"/>`, left, float64(gauge)-h, width, h)
		}
		if h := float64(chartCountH-4) * float64(waiting[i]) / float64(mostWaiting); h > 0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d8b9ff"/>`, left, float64(bottom)-h, width, h)
		}
	}
	b.WriteString("\n")
	// A line per percentile through the windows' middles, broken where no call returned.
	for _, l := range chartLines {
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				fmt.Fprintf(b, `<circle cx="%s" r="2" fill="%s"/>`, strings.Replace(pts[0], ",", `" cy="`, 1), l.color)
			} else if len(pts) > 1 {
				fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-dasharray="%s"/>`, strings.Join(pts, " "), l.color, l.dash)
			}
			pts = pts[:0]
		}
		for i, w := range windows {
			if len(w) == 0 {
				flush()
				continue
			}
			p := percentile(w, l.q)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(time.Duration(i)*step+step/2), yOf(p)))
		}
		flush()
		b.WriteString("\n")
	}
	drawFaults(b, r.Faults, x, lane+8, bottom, bottom+28)
}
