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

func TestStoreCountsLostUpdatesAndOversold(t *testing.T) {
	st := newStore(1)
	a, va := st.read()
	b, vb := st.read() // a second buyer reads before the first writes
	st.sell(a, va)
	st.sell(b, vb)
	if orders, lost, oversold := st.tally(); orders != 2 || lost != 1 || oversold != 1 {
		t.Fatalf("orders %d, lost %d, oversold %d; want 2, 1, 1", orders, lost, oversold)
	}
}
