package simulate_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/redlock/redlock/locktrace"
	"github.com/quorumlock/redlock/simulate"
)

// With Metrics, a run records every acquiring call and the waiting gauge from the clients'
// observer hook: while a majority of nodes is down no call returns and every client waits,
// and the chart draws it.
func TestMetricsOfACrash(t *testing.T) {
	t.Parallel()
	scs, err := simulate.Match("crash-majority")
	if err != nil || len(scs) != 1 {
		t.Fatal(scs, err)
	}
	synctest.Test(t, func(t *testing.T) {
		res := simulate.Run(context.Background(), scs[0], simulate.Options{Seed: 7, Metrics: true})
		if !res.OK || res.Metrics == nil || len(res.Faults) != 6 {
			t.Fatalf("ok %v, metrics %v, faults %v", res.OK, res.Metrics != nil, res.Faults)
		}
		down, up := res.Faults[2].At, res.Faults[3].At // the third crash, the first restart
		acquired, during := 0, 0
		for _, c := range res.Metrics.Calls {
			if c.Outcome == locktrace.OutcomeOK {
				acquired++
			}
			if c.At > down+time.Second && c.At < up {
				during++
			}
		}
		if acquired != res.Acquisitions || during != 0 {
			t.Errorf("%d calls acquired for %d sections; %d returned while a majority was down", acquired, res.Acquisitions, during)
		}
		waiting, last := 0, -1 // the gauge just before the restart, and at the end
		for _, w := range res.Metrics.Waiting {
			if w.At < up {
				waiting = w.N
			}
			last = w.N
		}
		if waiting != res.Clients || last != 0 {
			t.Errorf("%d of %d clients waited during the outage; %d at the end", waiting, res.Clients, last)
		}

		var b bytes.Buffer
		if err := simulate.WriteMetricsSVG(&b, []simulate.Result{res}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"crash-majority", "<polyline", "p99", "node B: crashes"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("the chart has no %q", want)
			}
		}
		for d := xml.NewDecoder(&b); ; {
			if _, err := d.Token(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("the chart is not XML: %v", err)
			}
		}
	})
}

// Without Metrics nothing is recorded, and a chart of such results says it has nothing.
func TestNoMetrics(t *testing.T) {
	scs, err := simulate.Match("no-faults")
	if err != nil || len(scs) != 1 {
		t.Fatalf("Match(no-faults): %d scenarios, %v", len(scs), err)
	}
	synctest.Test(t, func(t *testing.T) {
		res := simulate.Run(context.Background(), scs[0], simulate.Options{Seed: 7})
		if res.Metrics != nil {
			t.Fatal("metrics without Options.Metrics")
		}
		var b bytes.Buffer
		if err := simulate.WriteMetricsSVG(&b, []simulate.Result{res}); err != nil || !strings.Contains(b.String(), "no acquiring calls") {
			t.Fatalf("%v: %s", err, b.String())
		}
	})
}
