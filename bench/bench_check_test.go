package bench

import (
	"testing"
	"time"
)

func TestLongestGap(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name  string
		holds []hold
		want  time.Duration
	}{
		{"nobody held it", nil, 100 * ms},
		{"from the start", []hold{{0, 10 * ms}, {10 * ms, 100 * ms}}, 0},
		{"before the first", []hold{{30 * ms, 100 * ms}}, 30 * ms},
		{"after the last", []hold{{0, 60 * ms}}, 40 * ms},
		{"between, out of order", []hold{{50 * ms, 55 * ms}, {0, 5 * ms}, {80 * ms, 100 * ms}}, 45 * ms},
		{"overlapping", []hold{{0, 50 * ms}, {10 * ms, 20 * ms}, {60 * ms, 100 * ms}}, 10 * ms},
		{"past the end", []hold{{0, 10 * ms}, {90 * ms, 150 * ms}, {120 * ms, 130 * ms}}, 80 * ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := longestGap(c.holds, 100*ms); got != c.want {
				t.Fatalf("longestGap = %v, want %v", got, c.want)
			}
		})
	}
}

func TestShares(t *testing.T) {
	for _, c := range []struct {
		acquired  []int
		least     float64
		underHalf int
	}{
		{[]int{10, 10, 10, 10}, 1, 0},
		{[]int{20, 10, 6, 4}, 0.4, 1},
		{[]int{40, 0, 0, 0}, 0, 3},
		{[]int{0, 0, 0, 0}, 0, 4},
	} {
		least, underHalf := shares(c.acquired)
		if least != c.least || underHalf != c.underHalf {
			t.Errorf("shares(%v) = %v, %d; want %v, %d", c.acquired, least, underHalf, c.least, c.underHalf)
		}
	}
}

func TestParseWork(t *testing.T) {
	const info = "# Commandstats\r\ncmdstat_evalsha:calls=30,usec=900,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_time:calls=12,usec=10,usec_per_call=0.83,rejected_calls=0,failed_calls=0\r\n\r\n# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\nused_cpu_sys_children:9.0\r\n"
	before, after := newWork(), newWork()
	parseWork(info, &after)
	parseWork("cmdstat_evalsha:calls=10,usec=1\r\nused_cpu_sys:1.0\r\nused_cpu_user:0.25\r\n", &before)
	d := after.since(before)
	if d.calls["evalsha"] != 20 || d.calls["time"] != 12 || len(d.calls) != 2 {
		t.Errorf("calls = %v, want evalsha 20 and time 12", d.calls)
	}
	if d.usec["evalsha"] != 899 || d.usec["time"] != 10 {
		t.Errorf("usec = %v, want evalsha 899 and time 10", d.usec)
	}
	if d.cpuUS < 499_999 || d.cpuUS > 500_001 {
		t.Errorf("cpu = %v µs, want 500,000", d.cpuUS)
	}
}
