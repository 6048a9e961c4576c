package doctor

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// How Check samples a node's TIME: about samplesWanted calls spread over d, a pause of
// minPause to maxPause between two, and at least minSamples calls.
const (
	samplesWanted = 100
	minPause      = 5 * time.Millisecond
	maxPause      = 50 * time.Millisecond
	minSamples    = 3
)

// farOff is how far a node's clock may be from the others' before fencing counts it as far off:
// time synchronisation (NTP) keeps servers within milliseconds of one another, and a clock a
// second away is one that nothing sets.
const farOff = time.Second

// A sample is one call for a node's TIME.
type sample struct {
	sent, got time.Time // on the Client's clock, just before the call and just after it
	server    time.Time // the node's answer; zero when the call failed
	err       error
	late      bool // no reply within the bound
}

func (s sample) rtt() time.Duration { return s.got.Sub(s.sent) }

// mid is the moment on the Client's clock that best matches the node's answer.
func (s sample) mid() time.Time { return s.sent.Add(s.rtt() / 2) }

// answered reports whether the node answered a sample without an error.
func (r *reading) answered() bool {
	return slices.ContainsFunc(r.samples, func(s sample) bool { return s.err == nil })
}

// timeScript reads the server's TIME, for a node that runs scripts only.
var timeScript = newLuaScript("return redis.call('TIME')")

type luaScript struct{ src, sha string }

func newLuaScript(src string) luaScript {
	sum := sha1.Sum([]byte(src))
	return luaScript{src: src, sha: hex.EncodeToString(sum[:])}
}

func (s luaScript) Source() string { return s.src }
func (s luaScript) SHA1() string   { return s.sha }

// evalTime reads node r's TIME through a script, with a key so that a client of a whole
// cluster asks the same master every time.
func (c *doctor) evalTime(ctx context.Context, r *reading) (any, error) {
	return c.nodes[r.node].Eval(ctx, timeScript, []string{c.names.Key("doctor")}, nil)
}

// sample asks node r for its TIME every so often until w ends, at least minSamples times
// unless it never answers.
func (c *doctor) sample(ctx context.Context, r *reading, w window) {
	for {
		r.samples = append(r.samples, c.sampleOnce(ctx, r, w.bound))
		over := !c.clock.Now().Before(w.until)
		if ctx.Err() != nil || over && (len(r.samples) >= minSamples || !r.answered()) {
			return
		}
		t := c.clock.NewTimer(w.every)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

func (c *doctor) sampleOnce(ctx context.Context, r *reading, bound time.Duration) sample {
	s := sample{sent: c.clock.Now()}
	v, err := within(ctx, bound, func(ctx context.Context) (any, error) {
		if r.cmd != nil {
			return r.cmd.Command(ctx, "TIME")
		}
		return c.evalTime(ctx, r)
	})
	s.got = c.clock.Now()
	if err == nil {
		s.server, err = serverTime(v)
	}
	s.err, s.late = err, errors.Is(err, errLate)
	return s
}

// serverTime reads TIME's reply: seconds and microseconds.
func serverTime(v any) (time.Time, error) {
	a, _ := v.([]any)
	if len(a) != 2 {
		return time.Time{}, fmt.Errorf("TIME replied %v", v)
	}
	sec, err := number(a[0])
	if err != nil {
		return time.Time{}, err
	}
	usec, err := number(a[1])
	return time.Unix(sec, usec*1000), err
}

// A clockFit is a node's clock against the Client's, from its samples.
type clockFit struct {
	rate   float64       // how much faster the node's clock runs: 0.05 is 5 % fast
	spread float64       // the most the true rate may differ from rate
	span   time.Duration // between the two samples that rate comes from
	offset time.Duration // the node's clock minus the Client's wall clock
	within time.Duration // the most the true offset may differ from offset
}

// fitClock compares a node's answers with the Client's clock. The rate comes from two samples
// far apart, the quickest of the first third and of the last third of the answers: a node
// answers some time between sent and got, so the error is at most half of each one's round
// trip, over the time between them (and TIME's microsecond). It fails with fewer than 2 answers.
func fitClock(samples []sample) (clockFit, error) {
	var ok []sample
	for _, s := range samples {
		if s.err == nil {
			ok = append(ok, s)
		}
	}
	if len(ok) < 2 {
		return clockFit{}, fmt.Errorf("%d of %d calls answered", len(ok), len(samples))
	}
	third := max(len(ok)/3, 1)
	quickest := func(ss []sample) sample {
		return slices.MinFunc(ss, func(a, b sample) int { return int(a.rtt() - b.rtt()) })
	}
	a, b, best := quickest(ok[:third]), quickest(ok[len(ok)-third:]), quickest(ok)
	span := b.mid().Sub(a.mid())
	if span <= 0 {
		return clockFit{}, errors.New("the answers came too close together")
	}
	slack := float64(a.rtt()/2+b.rtt()/2+2*time.Microsecond) / float64(span)
	return clockFit{
		rate:   float64(b.server.Sub(a.server))/float64(span) - 1,
		spread: slack,
		span:   span,
		offset: best.server.Sub(best.mid().Round(0)), // Round(0): the wall clock
		within: best.rtt()/2 + time.Microsecond,
	}, nil
}

// percentile returns the p-th percentile of the samples' round trips, a late one counting as
// longer than any other, and whether it is one that came late.
func percentile(samples []sample, p float64) (time.Duration, bool) {
	rtts := make([]time.Duration, len(samples))
	for i, s := range samples {
		rtts[i] = s.rtt()
		if s.late {
			rtts[i] = math.MaxInt64
		}
	}
	slices.Sort(rtts)
	i := max(int(math.Ceil(p/100*float64(len(rtts))))-1, 0)
	return rtts[i], rtts[i] == math.MaxInt64
}

// fitClocks fits every node's clock, and finds those far off: farther than farOff from the
// median of all the clocks, the nodes' and this machine's (the lower of the middle two).
func (j *judge) fitClocks() {
	j.fits, j.bad, j.far = make([]clockFit, len(j.rs)), make([]error, len(j.rs)), map[int]time.Duration{}
	offsets := []time.Duration{0} // this machine's
	for i, r := range j.rs {
		if j.fits[i], j.bad[i] = fitClock(r.samples); j.bad[i] == nil {
			offsets = append(offsets, j.fits[i].offset)
		}
	}
	slices.Sort(offsets)
	median := offsets[(len(offsets)-1)/2]
	for i, f := range j.fits {
		if off := f.offset - median; j.bad[i] == nil && max(off, -off)-f.within > farOff {
			j.far[i] = off
		}
	}
}

// clock: the node's clock runs at this machine's rate within the drift factor, and is not far
// off from the others'.
func (j *judge) clock(r *reading) (Verdict, string) {
	if err := j.bad[r.node]; err != nil {
		return Warn, "not measured: " + err.Error()
	}
	f, df := j.fits[r.node], j.c.driftFactor
	pct := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }
	dir, effect := "fast", "expires lock keys early, while their holders still count on them"
	if f.rate < 0 {
		dir, effect = "slow", "keeps lock keys past their ttl, and the next holder waits as much longer"
	}
	seen := fmt.Sprintf("runs %s %s (±%s) against this machine's monotonic clock over %v", pct(math.Abs(f.rate)), dir,
		pct(f.spread), f.span.Round(time.Millisecond))
	v, detail := OK, seen+", within the drift factor "+pct(df)
	switch {
	case math.Abs(f.rate)-f.spread > df:
		v, detail = Fail, seen+", beyond the drift factor "+pct(df)+": it "+effect+": fix its time source (NTP, the VM's clock), or raise WithDriftFactor"
	case math.Abs(f.rate)+f.spread > df:
		v, detail = Warn, seen+": too wide a margin to tell it within the drift factor "+pct(df)+": sample longer"
	}
	if off, ok := j.far[r.node]; ok {
		ahead := "ahead of"
		if off < 0 {
			ahead, off = "behind", -off
		}
		v = max(v, Warn)
		if len(j.far) > 1 {
			v = Fail
		}
		others := ""
		if len(j.far) > 1 {
			others = fmt.Sprintf(", and %d are", len(j.far))
		}
		detail += fmt.Sprintf("; its clock is %v %s the median of the nodes' clocks and this machine's: fencing tokens take "+
			"the median of the granting nodes' clocks, which outvotes one far-off clock but not two%s: set its time right (NTP)",
			readable(off), ahead, others)
	}
	return v, detail
}

// latency: the round trips' 99th percentile against the node timeout.
func (j *judge) latency(r *reading) (Verdict, string) {
	p, late := percentile(r.samples, 99)
	t, n := j.c.nodeTimeout, len(r.samples)
	const advice = "bring the node closer, or raise WithNodeTimeout (keeping it small against the ttl)"
	switch {
	case late:
		return Fail, fmt.Sprintf("p99 round trip over %d calls longer than %v (no reply), more than the node timeout %v: "+
			"the Client counts such calls as failed: %s", n, j.w.bound, t, advice)
	case p > t:
		return Fail, fmt.Sprintf("p99 round trip %v over %d calls, more than the node timeout %v: the Client counts such "+
			"calls as failed, so the node seldom votes: %s", readable(p), n, t, advice)
	case p > t/2:
		return Warn, fmt.Sprintf("p99 round trip %v over %d calls, more than half the node timeout %v: calls near the "+
			"timeout count as failed, and every acquisition loses its round trip from the validity: %s", readable(p), n, t, advice)
	}
	return OK, fmt.Sprintf("p99 round trip %v over %d calls, under half the node timeout %v", readable(p), n, t)
}

// readable rounds d for reading: to 10µs under 10ms, to the second over a minute, else to
// the millisecond.
func readable(d time.Duration) time.Duration {
	switch {
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
