package bench

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest/delayproxy"
)

// Case 6's setting, from the issue "Gray failure: the lock keeps moving when two of five nodes
// are slow or drop replies".
const (
	grayTTL    = time.Second
	grayWindow = 4 * time.Second // several ttls: a stall of 1.5-2.4 s fits in it whole
	grayFaulty = 2               // the last two of the five nodes
	grayDrop   = 0.02            // the share of replies lost (see delayproxy.Fault)
)

var grayDelay = delayproxy.Fault{MinDelay: 20 * time.Millisecond, MaxDelay: 80 * time.Millisecond}

// grayFaults are the variants of case 6: what the proxies in front of the faulty nodes do to
// their replies. Requests pass at once.
var grayFaults = []struct {
	name    string
	replies delayproxy.Fault
}{
	{"none", delayproxy.Fault{}},
	{"slow", grayDelay},
	{"slow+drops", delayproxy.Fault{MinDelay: grayDelay.MinDelay, MaxDelay: grayDelay.MaxDelay, Drop: grayDrop}},
}

// 6. Gray failure: 8 Clients, each over go-redis clients of its own (BenchmarkContended's
// clients=8), take one key with a ttl of 1 s for one window, on five nodes of which the last
// two are reached through in-process proxies. With faults=none the proxies only forward (the
// baseline: the same hops, no faults); slow holds each reply 20-80 ms; slow+drops also loses
// 2 % of the replies, each silently stalling its connection (see delayproxy.Fault). Reported as
// BenchmarkContended reports (no-holder-max-us, the longest time nobody held the key,
// included), plus lost-replies, how many the proxies lost. When the window closes the
// proxies heal and cut their connections, so that calls stuck on a lost reply (go-redis waits
// 3 s for one, and retries up to 3 times) end at once instead of holding up the next case.
// Run with -benchtime=1x: one window an op, as a second would find the faults healed.
func BenchmarkGrayFailure(b *testing.B) {
	impls := []impl{oursImpl(grayTTL), redsyncImpl(grayTTL), redsyncFailFastImpl(grayTTL)}
	for _, v := range grayFaults {
		b.Run("faults="+v.name, func(b *testing.B) {
			for _, im := range impls {
				b.Run("impl="+im.name, func(b *testing.B) {
					if b.N > 1 {
						b.Fatal("one window an op: run with -benchtime=1x (the proxies heal as a window closes)")
					}
					as, proxies := grayAddrs(b, v.replies)
					ls := make([]locker, contenders)
					for i := range ls {
						ls[i] = im.make(b, clients(b, as))
					}
					defer func() {
						for _, l := range ls {
							l.close()
						}
					}()
					heal := func() {
						for _, p := range proxies {
							p.Heal()
						}
					}
					contended(b, ls, grayWindow, 0, heal)
					var lost int64
					for _, p := range proxies {
						lost += p.Stalls()
						if n := p.Unframed(); n > 0 {
							b.Fatalf("a proxy could not read %d of its connections as RESP: it lost nothing there", n)
						}
					}
					b.ReportMetric(float64(lost)/float64(b.N), "lost-replies")
				})
			}
		})
	}
}

// grayAddrs returns the addresses of five nodes, the last grayFaulty reached through proxies
// of their own that do f to replies, and the proxies. The proxies close when b ends, after
// the clients made later. Each proxy's seed is its node's index, so that every variant and
// library meets the same random draws in the same order of connections.
func grayAddrs(b *testing.B, f delayproxy.Fault) ([]string, []*delayproxy.Proxy) {
	b.Helper()
	as := addrs(b, 5, false)
	var proxies []*delayproxy.Proxy
	for i := len(as) - grayFaulty; i < len(as); i++ {
		p, err := delayproxy.Start(as[i], delayproxy.Config{Replies: f, Seed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		as[i] = p.Addr()
		proxies = append(proxies, p)
	}
	return as, proxies
}
