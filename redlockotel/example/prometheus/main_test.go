package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A short run on in-memory nodes prints every series, contended. The node timeout is generous:
// a loaded machine running -race must not leave the run without an acquisition.
func TestRunPrintsTheMetrics(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run([]string{"-for", "500ms", "-listen", "127.0.0.1:0", "-clients", "3", "-node-timeout", "2s"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{
		`redlock_acquire_duration_seconds_count{redlock_kind="mutex",redlock_outcome="acquired"}`,
		`redlock_acquire_attempts_total{redlock_outcome="not_acquired"}`,
		`redlock_node_duration_seconds_count{redlock_node="2",redlock_op="release",redlock_outcome="ok"}`,
		`redlock_held_duration_seconds_count{redlock_kind="mutex"}`,
		`redlock_lost_total{redlock_kind="mutex"} 0`,
		"redlock_waiting 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in:\n%s", want, out.String())
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-clients", "0"}, {"-ttl", "0s"}, {"-for", "-1s"}, {"extra"}} {
		var out, errs bytes.Buffer
		if err := run(append([]string{"-listen", "127.0.0.1:0"}, args...), &out, &errs); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
