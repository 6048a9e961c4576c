package simulate

import (
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// The fail-overs are the hand-overs from a Resign to a candidate that waited for it; a term
// that was lost, or a next term that began to campaign after the Resign, is no hand-over.
func TestFailovers(t *testing.T) {
	ss := []section{
		{Client: 1, Asked: 5 * ms, Acquired: 120 * ms, Unlock: 200 * ms},                   // waited for client 0
		{Client: 0, Asked: 0, Acquired: 10 * ms, Unlock: 100 * ms},                         // resigned
		{Client: 2, Asked: 150 * ms, Acquired: 230 * ms, Unlock: 400 * ms, Lost: 390 * ms}, // waited for client 1
		{Client: 0, Asked: 300 * ms, Acquired: 900 * ms, Unlock: 950 * ms},                 // after a lost term
		{Client: 1, Asked: 960 * ms, Acquired: 970 * ms, Unlock: 990 * ms},                 // nobody waited
	}
	got := failovers(ss)
	if len(got) != 2 || got[0] != 20*ms || got[1] != 30*ms {
		t.Fatalf("failovers %v, want [20ms 30ms]", got)
	}
}

// Two leaders at once: a candidate elected before the term before it was lost or resigned.
func TestTwoLeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		ss   []section
		want string
	}{
		{"resigned first", []section{{Client: 0, Acquired: 0, Unlock: 100 * ms}, {Client: 1, Acquired: 150 * ms, Unlock: 200 * ms}}, ""},
		{"lost first", []section{{Client: 0, Acquired: 0, Unlock: 900 * ms, Lost: 100 * ms}, {Client: 1, Acquired: 150 * ms, Unlock: 200 * ms}}, ""},
		{"elected while the term was not lost", []section{{Client: 0, Acquired: 0, Unlock: 900 * ms, Lost: 200 * ms}, {Client: 1, Acquired: 150 * ms, Unlock: 300 * ms}},
			"client 2 was elected at 0.15s while client 1's term, from 0.00s, was not lost until 0.20s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := twoLeaders(tc.ss)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("note %q, want %q", got, tc.want)
			}
		})
	}
}
