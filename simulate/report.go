package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable writes the results as an aligned table, one row per run.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tstrategy\texpected\tobserved\tviolations\tlost\trefused\tacquired\twait p50\twait max\tseed\tverdict")
	for _, r := range rs {
		verdict := "ok"
		if r.Observed == VerdictNotReproducible {
			verdict = "not reproducible: " + r.Note
		}
		if !r.OK {
			verdict = "UNEXPECTED"
			if r.Note != "" {
				verdict += ": " + r.Note
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\n",
			r.Scenario, r.Strategy, r.Expected, r.Observed, r.Violations, r.LostUpdates,
			r.StaleRefused, r.Acquisitions, seconds(r.WaitMedian), seconds(r.WaitMax), r.Seed, verdict)
	}
	return tw.Flush()
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

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
