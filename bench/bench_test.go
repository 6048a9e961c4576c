package bench

import (
	"context"
	"runtime"
	"slices"
	"strconv"
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
// clients (eight processes). Run with -benchtime=1x: one window an op.
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
					contended(b, ls)
				})
			}
		})
	}
}

// contended runs b.N windows over ls and reports what BenchmarkContended says. min-share is
// the fewest acquisitions of one contender over all windows divided by a fair share (all
// acquisitions over the number of contenders): 1 when they took turns evenly, 0 when one
// starved. A contender is a Client when there are several (clients=8, one goroutine each);
// when all goroutines share one Client (clients=1), whose share would always be 1, it is a
// goroutine.
func contended(b *testing.B, ls []locker) {
	var failed int
	var waits []time.Duration
	var longest time.Duration
	perGoroutine := make([]int, contenders)
	for range b.N {
		r := contend(ls, newKey())
		failed += r.failed
		waits = append(waits, r.waits...)
		longest = max(longest, r.unfinished)
		for g, n := range r.acquired {
			perGoroutine[g] += n
		}
	}
	b.StopTimer()
	acquired := len(waits)
	if acquired == 0 {
		b.Fatal("no acquisition in the window")
	}
	window := time.Duration(b.N) * contendWindow
	b.ReportMetric(float64(window.Nanoseconds())/float64(acquired), "ns/op")
	b.ReportMetric(float64(acquired)/window.Seconds(), "acq/s")
	b.ReportMetric(float64(failed)/window.Seconds(), "failed-locks/s")
	slices.Sort(waits)
	b.ReportMetric(us(percentile(waits, 0.50)), "wait-p50-us")
	b.ReportMetric(us(percentile(waits, 0.99)), "wait-p99-us")
	b.ReportMetric(us(max(waits[len(waits)-1], longest)), "wait-max-us")

	perContender := perGoroutine
	if len(ls) > 1 {
		perContender = make([]int, len(ls))
		for g, n := range perGoroutine {
			perContender[g%len(ls)] += n // the locker contend gave goroutine g
		}
	}
	fair := float64(acquired) / float64(len(perContender))
	b.ReportMetric(float64(slices.Min(perContender))/fair, "min-share")
}

type contention struct {
	waits      []time.Duration // one an acquisition
	acquired   []int           // acquisitions of each goroutine
	failed     int             // Lock calls that gave up (redsync after its 32 tries)
	unfinished time.Duration   // the longest wait cut off by the end of the window
}

// contend runs the contenders for one window on key, goroutine g with ls[g%len(ls)].
func contend(ls []locker, key string) contention {
	ctx, cancel := context.WithTimeout(context.Background(), contendWindow)
	defer cancel()
	var mu sync.Mutex
	r := contention{acquired: make([]int, contenders)}
	var wg sync.WaitGroup
	for g := range contenders {
		l := ls[g%len(ls)]
		wg.Go(func() {
			waits := make([]time.Duration, 0, 4096)
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
				waits = append(waits, time.Since(want))
				l.unlock(context.Background(), h)
				want = time.Now()
			}
			mu.Lock()
			defer mu.Unlock()
			r.waits = append(r.waits, waits...)
			r.acquired[g] = len(waits)
			r.failed += failed
			r.unfinished = max(r.unfinished, time.Since(want))
		})
	}
	wg.Wait()
	return r
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
