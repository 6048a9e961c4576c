package bench

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// serverWork is what a set of redis-servers had done by a moment: the calls of each command
// (INFO commandstats counts a command a script calls as well as the script), and the CPU time
// they used, in µs, user and system together.
type serverWork struct {
	calls map[string]int64 // by command name, lower case
	usec  map[string]int64 // the time the servers spent in each command, µs (a script's includes its calls')
	cpuUS float64
}

func newWork() serverWork { return serverWork{calls: map[string]int64{}, usec: map[string]int64{}} }

// readWork reads the work of the servers at as so far.
func readWork(b *testing.B, as []string) serverWork {
	b.Helper()
	w := newWork()
	for _, a := range as {
		rc := redis.NewClient(&redis.Options{Addr: a})
		info, err := rc.Info(context.Background(), "commandstats", "cpu").Result()
		rc.Close()
		if err != nil {
			b.Fatalf("bench: INFO commandstats of %s: %v", a, err)
		}
		parseWork(info, &w)
	}
	return w
}

// parseWork adds what an INFO reply of the commandstats and cpu sections says to w.
func parseWork(info string, w *serverWork) {
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			for field := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(field, "calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					w.calls[cmd] += n
				}
				if v, ok := strings.CutPrefix(field, "usec="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					w.usec[cmd] += n
				}
			}
			continue
		}
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			s, _ := strconv.ParseFloat(rest, 64)
			w.cpuUS += s * 1e6
		}
	}
}

// since returns the work done between before and w.
func (w serverWork) since(before serverWork) serverWork {
	d := newWork()
	d.cpuUS = w.cpuUS - before.cpuUS
	for cmd, n := range w.calls {
		if n -= before.calls[cmd]; n > 0 {
			d.calls[cmd] = n
			d.usec[cmd] = w.usec[cmd] - before.usec[cmd]
		}
	}
	return d
}

// reportWork reports the work d that nodes servers did for acquired acquisitions: the calls
// per acquisition per node (all of them, and the scripts among them), and the servers' CPU
// time per acquisition; it logs the calls of each command.
func reportWork(b *testing.B, d serverWork, acquired, nodes int) {
	b.Helper()
	if acquired == 0 {
		return
	}
	per := float64(acquired * nodes)
	var all, scripts int64
	var each []string
	for _, cmd := range slices.Sorted(maps.Keys(d.calls)) {
		n := d.calls[cmd]
		all += n
		if cmd == "evalsha" || cmd == "eval" || cmd == "fcall" {
			scripts += n
		}
		each = append(each, cmd+" "+strconv.FormatFloat(float64(n)/per, 'f', 2, 64)+" ("+
			strconv.FormatFloat(float64(d.usec[cmd])/per, 'f', 1, 64)+" µs)")
	}
	b.ReportMetric(float64(all)/per, "redis-calls/acq/node")
	b.ReportMetric(float64(scripts)/per, "scripts/acq/node")
	b.ReportMetric(d.cpuUS/float64(acquired), "redis-cpu-us/acq")
	b.Logf("%d acquisitions; calls per acquisition per node (and the time in them): %s", acquired, strings.Join(each, ", "))
}
