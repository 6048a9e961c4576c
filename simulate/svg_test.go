package simulate_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/simulate"
)

// Faults at one moment share a marker that names them all, and no two markers touch; the
// pictures start with a legend of their marks.
func TestSVGMarkersAndLegend(t *testing.T) {
	at := []time.Duration{0, 0, 3 * time.Second, 3*time.Second + time.Millisecond, 3*time.Second + 2*time.Millisecond, 9 * time.Second}
	var faults []simulate.Fault
	for i, d := range at {
		faults = append(faults, simulate.Fault{At: d, What: "fault " + strconv.Itoa(i+1)})
	}
	r := simulate.Result{Scenario: "s", Strategy: simulate.Redlock, Clients: 2, Elapsed: 10 * time.Second, Faults: faults,
		Metrics: &simulate.Metrics{Calls: []simulate.AcquireCall{{At: time.Second, Took: time.Millisecond}}}}
	for name, write := range map[string]func(*strings.Builder) error{
		"timeline": func(b *strings.Builder) error { return simulate.WriteSVG(b, []simulate.Result{r}) },
		"metrics":  func(b *strings.Builder) error { return simulate.WriteMetricsSVG(b, []simulate.Result{r}) },
	} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		svg := b.String()
		markers := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9]+" width="([0-9.]+)" height="12" rx="6" fill="#bf8700"/><text [^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1)
		var labels []string
		right := -1.0
		for _, m := range markers {
			labels = append(labels, m[3])
			x, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatalf("%s: marker %s: x: %v", name, m[3], err)
			}
			w, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatalf("%s: marker %s: width: %v", name, m[3], err)
			}
			if x < right {
				t.Errorf("%s: marker %s starts at %.1f, inside the one before (to %.1f)", name, m[3], x, right)
			}
			right = x + w
		}
		if got := strings.Join(labels, " "); got != "1,2 3–5 6" {
			t.Errorf("%s: markers %q, want 1,2 3–5 6", name, got)
		}
		if !strings.Contains(svg, "fault n, listed under its panel") || !strings.Contains(svg, "times in scenario seconds") {
			t.Errorf("%s: no legend", name)
		}
	}
}
