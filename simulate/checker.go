package simulate

import (
	"slices"
	"sync"
	"time"
)

// A section is one acquisition by one client, in true time since the start of the run.
// Enter and Exit bound what the client did to the store while it believed it held the lock:
// the read, and the write (Exit = Enter when it wrote nothing).
type section struct {
	Client   int
	Asked    time.Duration // Lock called
	Acquired time.Duration // Lock returned
	Enter    time.Duration // the stock read
	Exit     time.Duration // the stock written
	Unlock   time.Duration // Unlock called
	Released time.Duration // Unlock returned
	Wrote    bool
	Aborted  bool // the validity ran out or an extend failed: it wrote nothing
	// Reader is an RWMutex reader's section: it reads and works, never writes, and readers may
	// overlap one another (Exit is the end of its work).
	Reader bool
	// Lost is when the holding's Lost channel closed before Unlock was called (a leader's term
	// lost, not resigned), 0 when it did not or the holding has none.
	Lost time.Duration
	// Refused is when the store refused the section's write for its stale fencing token, 0
	// when it did not.
	Refused time.Duration
	// Fence is the section's fencing token (a term number for the election), 0 for none.
	Fence uint64
}

// backwards counts the sections whose fencing token is not larger than that of a section
// acquired before they asked: a token that went back, which lets a stale holder write. The
// sections are sorted by Asked on return.
func backwards(ss []section) int {
	acquired := slices.Clone(ss)
	slices.SortFunc(acquired, func(a, b section) int { return int(a.Acquired - b.Acquired) })
	slices.SortFunc(ss, func(a, b section) int { return int(a.Asked - b.Asked) })
	n, i := 0, 0
	var top uint64 // the largest token of the sections acquired before ss[j] asked
	for _, s := range ss {
		for ; i < len(acquired) && acquired[i].Acquired < s.Asked; i++ {
			top = max(top, acquired[i].Fence)
		}
		if s.Fence != 0 && s.Fence <= top {
			n++
		}
	}
	return n
}

// An overlap is two critical sections on one key that were open at the same true time.
type overlap struct {
	A, B     int // indexes into the run's sections
	From, To time.Duration
}

// A recorder collects what happened, from every client goroutine.
type recorder struct {
	mu       sync.Mutex
	sections []section
	extends  int // failed extends
}

func (r *recorder) add(s section) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sections = append(r.sections, s)
}

func (r *recorder) extendFailed(int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extends++
}

// overlaps finds every pair of sections whose [Enter, Exit] intervals intersect, but two
// readers': two clients acting on the store at once, a writer among them. The sections are
// sorted by Enter on return.
func overlaps(ss []section) []overlap {
	byEnter(ss)
	var out []overlap
	for i := range ss {
		for j := i + 1; j < len(ss) && ss[j].Enter < ss[i].Exit; j++ {
			if ss[i].Reader && ss[j].Reader {
				continue
			}
			out = append(out, overlap{A: i, B: j, From: ss[j].Enter, To: min(ss[i].Exit, ss[j].Exit)})
		}
	}
	return out
}

// crowds finds every moment, in true time, when a section entered while permits others were
// open: more holders of a semaphore of permits than it admits. Each is reported as an overlap
// of the entering section (B) with the open one that leaves first (A), for as long as both are
// open. The sections are sorted by Enter on return.
func crowds(ss []section, permits int) []overlap {
	byEnter(ss)
	var out []overlap
	var open []int // sections open at the current Enter
	for j := range ss {
		open = slices.DeleteFunc(open, func(i int) bool { return ss[i].Exit <= ss[j].Enter })
		if len(open) >= permits && ss[j].Exit > ss[j].Enter {
			first := slices.MinFunc(open, func(a, b int) int { return int(ss[a].Exit - ss[b].Exit) })
			out = append(out, overlap{A: first, B: j, From: ss[j].Enter, To: min(ss[first].Exit, ss[j].Exit)})
		}
		open = append(open, j)
	}
	return out
}

func byEnter(ss []section) {
	slices.SortStableFunc(ss, func(a, b section) int {
		switch {
		case a.Enter < b.Enter:
			return -1
		case a.Enter > b.Enter:
			return 1
		}
		return 0
	})
}

// noHolder returns the longest stretch of [from, to] in which no section held the lock, from
// one holder's Unlock call (or from) to the next Lock's return (or to), and when it began.
func noHolder(ss []section, from, to time.Duration) (longest, at time.Duration) {
	held := slices.Clone(ss)
	slices.SortFunc(held, func(a, b section) int { return int(a.Acquired - b.Acquired) })
	free := from // nobody holds from here until the next acquisition
	for _, s := range held {
		if gap := s.Acquired - free; gap > longest {
			longest, at = gap, free
		}
		free = max(free, s.Unlock)
	}
	if gap := to - free; gap > longest {
		longest, at = gap, free
	}
	return longest, at
}

// rate returns how many sections a scenario second were entered after the first, from the first
// acquisition to end: a start that the machine slowed (dialling, loading scripts) counts in
// noHolder, not here. It is 0 with fewer than two sections.
func rate(ss []section, end time.Duration) float64 {
	if len(ss) < 2 {
		return 0
	}
	first := slices.MinFunc(ss, func(a, b section) int { return int(a.Acquired - b.Acquired) }).Acquired
	if end <= first {
		return 0
	}
	return float64(len(ss)-1) / (end - first).Seconds()
}
