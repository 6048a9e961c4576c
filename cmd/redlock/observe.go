package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// watch is redlock elect --observe: it prints the election's leader now and at every change
// until a signal comes, and returns the exit status.
func (el *electing) watch(ctx context.Context) int {
	return el.connected(ctx, nil, func(locker *redlock.Client) (int, func(context.Context)) {
		e, err := locker.Election(el.election, el.ttl)
		if err != nil { // the flags were checked: nothing Election refuses is left
			el.errorf("%v", err)
			return exitSoftware, nil
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes := e.Observe(ctx)
		for {
			select {
			case l, ok := <-changes:
				if !ok { // the Client closed under it
					el.errorf("the observation ended")
					return exitSoftware, nil
				}
				el.print(l)
			case s := <-el.sigs:
				el.logf("%v: done", s)
				return 0, nil
			}
		}
	})
}

// print writes l on stdout, as JSON with -json.
func (el *electing) print(l redlock.Leader) {
	if el.json {
		writeLeaderJSON(el.stdout, l, "")
		return
	}
	fmt.Fprintln(el.stdout, leaderLine(l))
}

// leaderLine is l in a line for people: `leader "V" term N until 15:04:05.000`, or `no leader`.
func leaderLine(l redlock.Leader) string {
	if l.Term == 0 {
		return "no leader"
	}
	return fmt.Sprintf("leader %q term %d until %s", l.Value, l.Term, l.Until.Round(time.Millisecond).Format("15:04:05.000"))
}

// leaderJSON is l as -json prints it; value "" and term 0 say that there is no leader (until is
// then the zero time).
type leaderJSON struct {
	Value string    `json:"value"`
	Term  uint64    `json:"term"`
	Until time.Time `json:"until"` // RFC 3339, to the millisecond
}

// writeLeaderJSON writes l to w as one JSON object, indented by indent when not "".
func writeLeaderJSON(w io.Writer, l redlock.Leader, indent string) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	enc.Encode(leaderJSON{Value: l.Value, Term: l.Term, Until: l.Until.Round(time.Millisecond)})
}
