package bench

import (
	"cmp"
	"context"
	"flag"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every case runs each library as a sub-benchmark named impl=<library>, so that
// `benchstat -col /impl` sets them side by side.

var (
	quorumImpls = []impl{implFloor, implOurs, implRedsync, implRedsyncFailFast}
	allImpls    = append(slices.Clone(quorumImpls), implRedislock)
)

// 1. Uncontended Lock+Unlock on 5 local nodes, one caller after another and in parallel
// (GOMAXPROCS goroutines), a fresh key every operation. redislock runs on the first node only.
func BenchmarkUncontended(b *testing.B) {
	for _, mode := range []struct {
		name string
		p    int // goroutines per GOMAXPROCS; 0 for serial
	}{{"serial", 0}, {"parallel", 1}, {"g8", 8 / runtime.GOMAXPROCS(0)}, {"g64", 64 / runtime.GOMAXPROCS(0)}} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			for _, im := range allImpls {
				b.Run("impl="+im.name, func(b *testing.B) {
					l := im.make(b, clients(b, addrs(b, 5, false)))
					defer l.close()
					if mode.p == 0 {
						serial(b, l)
					} else {
						parallel(b, l, max(mode.p, 1))
					}
				})
			}
		})
	}
}

// 2. Five nodes, node 0 behind a proxy that delays every byte 20 ms each way: a library that
// waits for every node pays 40 ms a call; one that decides at a majority need not.
func BenchmarkSlowNode(b *testing.B) {
	for _, im := range quorumImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			l := im.make(b, clients(b, addrs(b, 5, true)))
			defer l.close()
			keys := newKeys(b.N)
			lockLat := make([]time.Duration, 0, b.N)
			unlockLat := make([]time.Duration, 0, b.N)
			var errs failures
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				h, err := l.lock(ctx, keys[i])
				t1 := time.Now()
				lockLat = append(lockLat, t1.Sub(t0))
				if err == nil {
					err = l.unlock(ctx, h)
					unlockLat = append(unlockLat, time.Since(t1))
				}
				errs.add(err)
			}
			b.StopTimer()
			errs.report(b)
			reportLatency(b, "lock-", lockLat)
			reportLatency(b, "unlock-", unlockLat)
		})
	}
}

// contendWindow is how long the contended case runs: 8 goroutines take and release one key
// for this long; every acquisition is one op.
const (
	contenders    = 8
	contendWindow = 2 * time.Second
)

// 3. Contended: 8 goroutines on one key for a fixed window, each locking again as soon as it
// released. Reported: acquisitions/s, the wait (from wanting the lock to holding it, across
// failed Lock calls) at p50, p99 and max, max including waits still unfinished when the window
// closed, and min-share, the fairness (see contended). With clients=1 the goroutines share one
// client of the library (one process); with clients=8 each has its own, over its own go-redis
// clients (eight processes). Also reported, from INFO of the 5 servers before and after the
// window (the clients warmed up before it: see warm): redis-calls/acq/node, the commands the
// servers ran per acquisition per node (those a script calls counted too), scripts/acq/node, the
// scripts among them, and redis-cpu-us/acq, the servers' CPU time per acquisition. Run with
// -benchtime=1x: one window an op.
func BenchmarkContended(b *testing.B) {
	for _, shared := range []bool{true, false} {
		name := "clients=1"
		if !shared {
			name = "clients=" + strconv.Itoa(contenders)
		}
		b.Run(name, func(b *testing.B) {
			for _, im := range []impl{implOurs, implRedsync, implRedsyncFailFast} {
				b.Run("impl="+im.name, func(b *testing.B) {
					ls := make([]locker, 1, contenders)
					ls[0] = im.make(b, clients(b, addrs(b, 5, false)))
					for !shared && len(ls) < contenders {
						ls = append(ls, im.make(b, clients(b, addrs(b, 5, false))))
					}
					defer func() {
						for _, l := range ls {
							l.close()
						}
					}()
					warm(ls, 0)
					as := addrs(b, 5, false)
					before := readWork(b, as)
					acquired := contended(b, ls, contendWindow, 0, nil)
					reportWork(b, readWork(b, as).since(before), acquired, len(as))
				})
			}
		})
	}
}

// holds are the times BenchmarkHeld's contenders hold the lock: -holds=20ms,100ms by default,
// any other list of durations on the command line (go test -bench Held -args -holds=5ms,1s).
var holds = flag.String("holds", "20ms,100ms", "how long each contender of BenchmarkHeld holds the lock, a list of durations")

// 3b. Held: as Contended with 8 clients, each holding the lock for a while (its work) before it
// unlocks: what waiting costs when the holder is busy, which is how locks are used. The window
// is long enough for about 50 acquisitions (at least 2 s), so that the least share counts
// several turns each. Reported as Contended. Run with -benchtime=1x: one window an op.
func BenchmarkHeld(b *testing.B) {
	for _, h := range strings.Split(*holds, ",") {
		work, err := time.ParseDuration(strings.TrimSpace(h))
		if err != nil || work <= 0 {
			b.Fatalf("bench: -holds: %q is not a positive duration", h)
		}
		b.Run("hold="+work.String(), func(b *testing.B) {
			for _, im := range []impl{implOurs, implRedsync} {
				b.Run("impl="+im.name, func(b *testing.B) {
					ls := make([]locker, contenders)
					for i := range ls {
						ls[i] = im.make(b, clients(b, addrs(b, 5, false)))
					}
					defer func() {
						for _, l := range ls {
							l.close()
						}
					}()
					warm(ls, work)
					as := addrs(b, 5, false)
					before := readWork(b, as)
					acquired := contended(b, ls, max(contendWindow, 50*work), work, nil)
					reportWork(b, readWork(b, as).since(before), acquired, len(as))
				})
			}
		})
	}
}

// warm lets the contenders take turns on a key of their own for a moment before a measured
// window, holding it for work each time, so that every one of them has connected to every node,
// loaded its scripts and, where it waits for announcements, subscribed: the window's Redis work
// is then what acquisitions cost, not what setting up a new client costs. Every library gets the
// same moment.
func warm(ls []locker, work time.Duration) {
	contend(ls, newKey(), 300*time.Millisecond, work, nil)
}

// contended runs b.N windows of the given length over ls and reports what BenchmarkContended
// says. min-share is the fewest acquisitions of one contender over all windows divided by a
// fair share (all acquisitions over the number of contenders): 1 when they took turns evenly,
// 0 when one starved; under-half-share counts the contenders below half a fair share. A
// contender is a Client when there are several (clients=8, one goroutine each); when all
// goroutines share one Client (clients=1), whose share would always be 1, it is a goroutine.
// no-holder-max-us is the longest time of any window when nobody held the key (see contend).
// closed, unless nil, is called as each window closes. No acquisition at all is a result too:
// every wait then lasted the window, and ns/op is the time measured, as if one had come at
// its end. It returns the number of acquisitions.
func contended(b *testing.B, ls []locker, length, work time.Duration, closed func()) int {
	var failed int
	var waits []time.Duration
	var longest, noHolder time.Duration
	perGoroutine := make([]int, contenders)
	for range b.N {
		r := contend(ls, newKey(), length, work, closed)
		failed += r.failed
		waits = append(waits, r.waits...)
		longest = max(longest, r.unfinished)
		noHolder = max(noHolder, r.noHolder)
		for g, n := range r.acquired {
			perGoroutine[g] += n
		}
	}
	b.StopTimer()
	acquired := len(waits)
	if acquired == 0 {
		b.Log("no acquisition in the window")
		waits = append(waits, longest)
	}
	window := time.Duration(b.N) * length
	b.ReportMetric(float64(window.Nanoseconds())/float64(max(acquired, 1)), "ns/op")
	b.ReportMetric(float64(acquired)/window.Seconds(), "acq/s")
	b.ReportMetric(float64(failed)/window.Seconds(), "failed-locks/s")
	slices.Sort(waits)
	b.ReportMetric(us(percentile(waits, 0.50)), "wait-p50-us")
	b.ReportMetric(us(percentile(waits, 0.99)), "wait-p99-us")
	b.ReportMetric(us(max(waits[len(waits)-1], longest)), "wait-max-us")
	b.ReportMetric(us(noHolder), "no-holder-max-us")

	perContender := perGoroutine
	if len(ls) > 1 {
		perContender = make([]int, len(ls))
		for g, n := range perGoroutine {
			perContender[g%len(ls)] += n // the locker contend gave goroutine g
		}
	}
	least, underHalf := shares(perContender)
	b.ReportMetric(least, "min-share")
	b.ReportMetric(float64(underHalf), "under-half-share")
	return acquired
}

// shares returns the least of the contenders' acquisitions as a fraction of a fair share (all
// acquisitions over the number of contenders), and how many had less than half a fair share.
// When none acquired anything, every one starved.
func shares(acquired []int) (least float64, underHalf int) {
	total := 0
	for _, n := range acquired {
		total += n
	}
	if total == 0 {
		return 0, len(acquired)
	}
	fair := float64(total) / float64(len(acquired))
	for _, n := range acquired {
		if float64(n) < fair/2 {
			underHalf++
		}
	}
	return float64(slices.Min(acquired)) / fair, underHalf
}

type contention struct {
	waits      []time.Duration // one an acquisition
	acquired   []int           // acquisitions of each goroutine
	failed     int             // Lock calls that gave up (redsync after its 32 tries)
	unfinished time.Duration   // the longest wait cut off by the end of the window
	noHolder   time.Duration   // the longest time of the window when nobody held the key
}

// A hold is one holder's time with the key, from its Lock's return to its Unlock's call, in
// time since the window began.
type hold struct{ from, to time.Duration }

// contend runs the contenders for one window of the given length on key, goroutine g with
// ls[g%len(ls)], each holding the lock for work before it unlocks. A Lock call still running when the window closes is cancelled; its wait
// counts up to the close, and it counts as no acquisition if it succeeds after. closed,
// unless nil, is called as the window closes, before contend waits for its goroutines (a
// benchmark with faulty nodes cuts their connections, so that calls stuck on them end).
func contend(ls []locker, key string, length, work time.Duration, closed func()) contention {
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(length))
	defer cancel()
	var mu sync.Mutex
	r := contention{acquired: make([]int, contenders)}
	var holds []hold
	var wg sync.WaitGroup
	if closed != nil {
		wg.Go(func() {
			<-ctx.Done() // the deadline: nothing else cancels it before wg.Wait returns
			closed()
		})
	}
	for g := range contenders {
		l := ls[g%len(ls)]
		wg.Go(func() {
			waits := make([]time.Duration, 0, 4096)
			mine := make([]hold, 0, 4096)
			failed := 0
			want := time.Now()
			for ctx.Err() == nil {
				h, err := l.lock(ctx, key)
				if err != nil {
					if ctx.Err() == nil {
						failed++
					}
					continue
				}
				held := time.Now()
				if held.Sub(start) >= length {
					l.unlock(context.Background(), h)
					break
				}
				waits = append(waits, held.Sub(want))
				if work > 0 {
					time.Sleep(work)
				}
				mine = append(mine, hold{held.Sub(start), time.Since(start)})
				l.unlock(context.Background(), h)
				want = time.Now()
			}
			mu.Lock()
			defer mu.Unlock()
			r.waits = append(r.waits, waits...)
			holds = append(holds, mine...)
			r.acquired[g] = len(waits)
			r.failed += failed
			r.unfinished = max(r.unfinished, min(time.Since(start), length)-want.Sub(start))
		})
	}
	wg.Wait()
	r.noHolder = longestGap(holds, length)
	return r
}

// longestGap returns the longest time in [0, length) that no hold covers; holds overlap only
// when a library let two holders in.
func longestGap(holds []hold, length time.Duration) time.Duration {
	slices.SortFunc(holds, func(a, b hold) int { return cmp.Compare(a.from, b.from) })
	var gap, covered time.Duration // covered: [0, covered) is a gap already measured or held
	for _, h := range holds {
		if h.from >= length {
			break
		}
		gap = max(gap, h.from-covered)
		covered = max(covered, min(h.to, length))
	}
	return max(gap, length-covered)
}

// 4. Uncontended serial Lock+Unlock on N = 3, 5 and 7 local nodes: how the cost grows with N.
func BenchmarkNodes(b *testing.B) {
	for _, n := range []int{3, 5, 7} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for _, im := range []impl{implFloor, implOurs, implRedsync} {
				b.Run("impl="+im.name, func(b *testing.B) {
					l := im.make(b, clients(b, addrs(b, n, false)))
					defer l.close()
					serial(b, l)
				})
			}
		})
	}
}

// newKeys returns n keys no other benchmark uses. Every operation of an uncontended case
// takes a key of its own, so that the releases a library leaves in flight when Unlock
// returns (on the nodes beyond the majority) never meet the next operation's SET NX.
func newKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = newKey()
	}
	return keys
}

// serial locks and unlocks a fresh key b.N times, reporting allocations and the latency of
// each Lock+Unlock at p50 and p99.
func serial(b *testing.B, l locker) {
	ctx := context.Background()
	keys := newKeys(b.N)
	lat := make([]time.Duration, 0, b.N)
	var errs failures
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		h, err := l.lock(ctx, keys[i])
		if err == nil {
			err = l.unlock(ctx, h)
		}
		errs.add(err)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	errs.report(b)
	reportLatency(b, "", lat)
}

// parallel is serial from p × GOMAXPROCS goroutines at once.
func parallel(b *testing.B, l locker, p int) {
	ctx := context.Background()
	keys := newKeys(b.N)
	var taken atomic.Int64                                   // keys handed out
	lats := make([][]time.Duration, p*runtime.GOMAXPROCS(0)) // RunParallel's goroutine count
	for i := range lats {
		lats[i] = make([]time.Duration, 0, b.N)
	}
	var next atomic.Int32
	var mu sync.Mutex
	var errs failures
	b.ReportAllocs()
	b.SetParallelism(p)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := int(next.Add(1)) - 1
		lat := lats[id]
		var mine failures
		for pb.Next() {
			key := keys[taken.Add(1)-1] // pb.Next hands out b.N iterations in all
			t0 := time.Now()
			h, err := l.lock(ctx, key)
			if err == nil {
				err = l.unlock(ctx, h)
			}
			mine.add(err)
			lat = append(lat, time.Since(t0))
		}
		lats[id] = lat
		mu.Lock()
		errs.merge(mine)
		mu.Unlock()
	})
	b.StopTimer()
	errs.report(b)
	reportLatency(b, "", slices.Concat(lats...))
}

// failures counts the Lock+Unlock operations that failed. A library may fail an operation on
// a loaded machine (a node slower than its timeout): that is a result to report, not a reason
// to drop the whole run.
type failures struct {
	n, ops int
	first  error
}

func (f *failures) add(err error) {
	f.ops++
	if err != nil {
		f.n++
		if f.first == nil {
			f.first = err
		}
	}
}

func (f *failures) merge(g failures) {
	f.ops += g.ops
	f.n += g.n
	if f.first == nil {
		f.first = g.first
	}
}

// report fails b when every operation failed, and otherwise reports the share that failed.
func (f *failures) report(b *testing.B) {
	if f.n == f.ops {
		b.Fatalf("every operation failed; the first: %v", f.first)
	}
	if f.n > 0 {
		b.Logf("%d of %d operations failed; the first: %v", f.n, f.ops, f.first)
	}
	b.ReportMetric(float64(f.n)/float64(f.ops), "errors/op")
}

// reportLatency sorts lat and reports its p50 and p99 in microseconds.
func reportLatency(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		b.Fatal("no latency recorded")
	}
	slices.Sort(lat)
	b.ReportMetric(us(percentile(lat, 0.50)), prefix+"p50-us")
	b.ReportMetric(us(percentile(lat, 0.99)), prefix+"p99-us")
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
