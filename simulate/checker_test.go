package simulate

import (
	"testing"
	"time"
)

func TestOverlaps(t *testing.T) {
	s := func(client int, enter, exit time.Duration) section {
		return section{Client: client, Enter: enter * time.Second, Exit: exit * time.Second}
	}
	for _, tc := range []struct {
		name string
		ss   []section
		want int
	}{
		{"none", nil, 0},
		{"back to back", []section{s(0, 0, 1), s(1, 1, 2), s(0, 2, 3)}, 0},
		{"one inside another", []section{s(0, 0, 10), s(1, 3, 4)}, 1},
		{"a long one over two", []section{s(1, 5, 6), s(0, 0, 10), s(2, 7, 8)}, 2},
		{"aborted (empty) sections never overlap", []section{s(0, 2, 2), s(1, 2, 2)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overlaps(tc.ss); len(got) != tc.want {
				t.Fatalf("%d overlaps %v, want %d", len(got), got, tc.want)
			}
		})
	}
}

func TestOverlapsSkipReaders(t *testing.T) {
	r := func(client int, enter, exit time.Duration) section {
		return section{Client: client, Enter: enter * time.Second, Exit: exit * time.Second, Reader: true}
	}
	w := func(client int, enter, exit time.Duration) section {
		return section{Client: client, Enter: enter * time.Second, Exit: exit * time.Second}
	}
	if got := overlaps([]section{r(0, 0, 5), r(1, 1, 6), r(2, 2, 3)}); len(got) != 0 {
		t.Fatalf("readers overlapping each other: %v", got)
	}
	if got := overlaps([]section{r(0, 0, 5), w(1, 4, 6), r(2, 5, 7)}); len(got) != 2 {
		t.Fatalf("a writer among readers: %d overlaps %v, want 2", len(got), got)
	}
}

// crowds counts the sections that entered while permits others were open.
func TestCrowds(t *testing.T) {
	s := func(client int, enter, exit time.Duration) section {
		return section{Client: client, Enter: enter * time.Second, Exit: exit * time.Second}
	}
	for _, tc := range []struct {
		name    string
		ss      []section
		permits int
		want    int
	}{
		{"two of two", []section{s(0, 0, 4), s(1, 1, 5)}, 2, 0},
		{"three of two", []section{s(0, 0, 4), s(1, 1, 5), s(2, 3, 6)}, 2, 1},
		{"the third after one left", []section{s(0, 0, 4), s(1, 1, 5), s(2, 4, 6)}, 2, 0},
		{"three of three", []section{s(0, 0, 4), s(1, 1, 5), s(2, 3, 6)}, 3, 0},
		{"a crowd of four", []section{s(0, 0, 9), s(1, 1, 9), s(2, 2, 9), s(3, 3, 9)}, 2, 2},
		{"empty sections never crowd", []section{s(0, 0, 4), s(1, 1, 5), s(2, 3, 3)}, 2, 0},
		{"one permit is overlaps", []section{s(1, 5, 6), s(0, 0, 10), s(2, 7, 8)}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := crowds(tc.ss, tc.permits); len(got) != tc.want {
				t.Fatalf("%d crowds %v, want %d", len(got), got, tc.want)
			}
		})
	}
}

func TestStoreCountsLostUpdatesAndOversold(t *testing.T) {
	st := newStore(1)
	a, va := st.read(0)
	b, vb := st.read(0) // a second buyer reads before the first writes
	st.sell(a, va, 0)
	st.sell(b, vb, 0)
	if orders, lost, oversold := st.tally(); orders != 2 || lost != 1 || oversold != 1 {
		t.Fatalf("orders %d, lost %d, oversold %d; want 2, 1, 1", orders, lost, oversold)
	}
}

// With fencing tokens the same interleaving cannot lose an update: the stale holder (token 1)
// reads, pauses; the next holder (token 2) reads and writes; the stale write is refused. A
// stale write is refused too when the newer holder has only read so far.
func TestFencedStoreRefusesStaleWrites(t *testing.T) {
	st := newStore(5)
	a, va := st.read(1)
	b, vb := st.read(2)
	if !st.sell(b, vb, 2) {
		t.Fatal("the current holder's write was refused")
	}
	if st.sell(a, va, 1) {
		t.Fatal("the stale holder's write was accepted")
	}
	c, vc := st.read(3)
	if st.sell(c-1, vc, 2) {
		t.Fatal("a write with a token below a later reader's was accepted")
	}
	if orders, lost, _ := st.tally(); orders != 1 || lost != 0 || st.refusedWrites() != 2 {
		t.Fatalf("orders %d, lost %d, refused %d; want 1, 0, 2", orders, lost, st.refusedWrites())
	}
}

// held is a section that held the lock from acquired to its Unlock call, in seconds.
func held(acquired, unlock float64) section {
	s := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	return section{Acquired: s(acquired), Unlock: s(unlock)}
}

func TestNoHolder(t *testing.T) {
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	for _, tc := range []struct {
		name        string
		ss          []section
		from, to    float64
		longest, at float64
	}{
		{"nobody ever", nil, 0, 30, 30, 0},
		{"back to back", []section{held(0, 1), held(1, 2), held(2, 3)}, 0, 3, 0, 0},
		{"a slow start", []section{held(4, 5), held(5, 6)}, 0, 6, 4, 0},
		{"a gap between two", []section{held(0, 1), held(3, 4), held(4.5, 5)}, 0, 5, 2, 1},
		{"overlapping holders cover one another", []section{held(0, 4), held(1, 2), held(3, 6), held(7, 8)}, 0, 8, 1, 6},
		{"a stalled end", []section{held(0, 1)}, 0, 25, 24, 1},
		{"from the first client's start", []section{held(1.5, 2)}, 1, 2, 0.5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			longest, at := noHolder(tc.ss, sec(tc.from), sec(tc.to))
			if longest != sec(tc.longest) || at != sec(tc.at) {
				t.Fatalf("noHolder = %v at %v, want %v at %v", longest, at, sec(tc.longest), sec(tc.at))
			}
		})
	}
}

func TestRate(t *testing.T) {
	// Three sections after the first, in the 6 s from the first acquisition (at 2 s) to the end.
	ss := []section{held(3, 4), held(2, 3), held(6, 7), held(4, 5)}
	if got := rate(ss, 8*time.Second); got != 0.5 {
		t.Fatalf("rate = %v, want 0.5 a second", got)
	}
	if got := rate(ss[:1], 8*time.Second); got != 0 {
		t.Fatalf("rate of one section = %v, want 0", got)
	}
}
