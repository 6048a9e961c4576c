package simulate

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A meeting ends a planned wait as soon as the clients it waits for have entered a critical
// section, instead of guessing how long they take. A fault whose effect needs a second client
// to act (a holder that must still be working when the next one enters, a stale write that
// must come after the next holder's read) then hits on a loaded machine too, where real-time
// clients run later than any schedule of fixed times allows for.
//
// A planned section (one whose plan names the meeting) opens it; from then on each member that
// enters a section arrives, the planned one included, and the meeting is met when need
// distinct members have arrived. Entries before it opened do not count.
type meeting struct {
	members []int  // the clients that count; nil for every client
	need    int    // distinct members that must arrive
	waits   string // who waits for whom, for the notes
	beat    time.Duration

	mu      sync.Mutex
	arrived []int
	met     chan struct{} // closed by the arrival that met the meeting

	opened   atomic.Bool
	timedOut atomic.Bool // a planned wait ended before the meeting was met
	gaveUp   atomic.Bool // a planned section wrote nothing after its wait: its validity had run out
}

// meetBeat is how long, in scenario time, a section whose wait a meeting ended goes on before
// it writes: its write then comes after the entry that met the meeting even in virtual time,
// where both would otherwise happen at the same instant.
const meetBeat = 10 * time.Millisecond

// meetWithin is the longest a planned pause waits for its meeting: three TTLs, which a second
// client needs only when the machine runs it very late.
const meetWithin = 3 * TTL

// meetAnother returns a new meeting of the run for client c's planned section: met when
// another client enters a section.
func (r *run) meetAnother(c int) *meeting {
	return r.meet(2, nil, fmt.Sprintf("client %d waits for another client to enter", c+1))
}

// meet returns a new meeting of the run: met when need of members (nil: any client) entered.
func (r *run) meet(need int, members []int, waits string) *meeting {
	m := &meeting{members: members, need: need, waits: waits, beat: r.d(meetBeat), met: make(chan struct{})}
	r.meetings = append(r.meetings, m)
	return m
}

// enter tells every meeting of the run that client c entered a section planned with the
// meeting planned (nil when the section had no meeting), which opens that one.
func (r *run) enter(c int, planned *meeting) {
	if planned != nil {
		planned.open()
	}
	for _, m := range r.meetings {
		m.arrive(c)
	}
}

func (m *meeting) open() { m.opened.Store(true) }

// arrive counts client c, when it is a member not yet counted and the meeting is open.
func (m *meeting) arrive(c int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.opened.Load() || m.members != nil && !slices.Contains(m.members, c) || slices.Contains(m.arrived, c) {
		return
	}
	if m.arrived = append(m.arrived, c); len(m.arrived) == m.need {
		close(m.met)
	}
}

// wait waits until the meeting is met (and then a beat more) or t fires, whichever comes
// first. A nil meeting waits for t.
func (m *meeting) wait(t *time.Timer) {
	defer t.Stop()
	if m == nil {
		<-t.C
		return
	}
	select {
	case <-m.met:
		time.Sleep(m.beat)
	case <-t.C:
		m.timedOut.Store(true)
	}
}

// giveUp records that a planned section wrote nothing after its wait: its validity had run
// out. A nil meeting records nothing.
func (m *meeting) giveUp() {
	if m != nil {
		m.gaveUp.Store(true)
	}
}

// missed says how the meeting missed its window: its wait ended first, or a planned section
// gave up its write; "" when it did not miss.
func (m *meeting) missed() string {
	met := false
	select {
	case <-m.met:
		met = true
	default:
	}
	switch {
	case !met || m.timedOut.Load():
		return m.waits + ": none came in time"
	case m.gaveUp.Load():
		return m.waits + ": they came, but the waiting section's validity had run out before it could write"
	}
	return ""
}

// missedMeeting is the missed check of a run with meetings: how the first that missed did.
func (r *run) missedMeeting(*Result) string {
	for _, m := range r.meetings {
		if why := m.missed(); why != "" {
			return why
		}
	}
	return ""
}
