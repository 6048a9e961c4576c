package redlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockotel"
)

// Observe a Client, take a lock that a second call is refused, and read the metrics.
func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader() // in production: a Prometheus or OTLP exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	var nodes []redis.UniversalClient
	for range 3 {
		m := miniredis.NewMiniRedis() // in production: independent Redis masters
		if err := m.Start(); err != nil {
			panic(err)
		}
		defer m.Close()
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		defer rdb.Close()
		nodes = append(nodes, rdb)
	}
	obs, err := redlockotel.Observer(redlockotel.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := redlock.New(nodes, redlock.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := c.Lock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.TryLock(ctx, "report", 10*time.Second)
	fmt.Println("second TryLock refused:", errors.Is(err, redlock.ErrNotAcquired))
	if err := l.Unlock(ctx); err != nil {
		fmt.Println(err)
	}
	c.Close() // waits for the node calls still in flight, so that all are counted

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	printMetrics(rm)
	// Output:
	// second TryLock refused: true
	// redlock.acquire.attempts{redlock.outcome=acquired} 1
	// redlock.acquire.attempts{redlock.outcome=not_acquired} 1
	// redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=acquired} count 1
	// redlock.acquire.duration{redlock.kind=mutex,redlock.outcome=not_acquired} count 1
	// redlock.held.duration{redlock.kind=mutex} count 1
	// redlock.lost{redlock.kind=mutex} 0
	// redlock.node.duration{redlock.op=acquire} count 6
	// redlock.waiting 0
}

// printMetrics prints the sums and the histograms' counts, one series a line, skipping the
// kinds other than mutex, and adding up the node calls by op (the replies to the refused
// TryLock that came after the Unlock said yes, and were rolled back: their releases vary).
func printMetrics(rm metricdata.ResourceMetrics) {
	var out []string
	acquires := uint64(0)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if k, ok := p.Attributes.Value("redlock.kind"); !ok || k.AsString() == "mutex" {
						out = append(out, fmt.Sprintf("%s%s %d", m.Name, labels(p.Attributes), p.Value))
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if m.Name != "redlock.node.duration" {
						out = append(out, fmt.Sprintf("%s%s count %d", m.Name, labels(p.Attributes), p.Count))
					} else if op, _ := p.Attributes.Value("redlock.op"); op.AsString() == "acquire" {
						acquires += p.Count
					}
				}
			}
		}
	}
	out = append(out, fmt.Sprintf("redlock.node.duration{redlock.op=acquire} count %d", acquires))
	slices.Sort(out)
	fmt.Println(strings.Join(out, "\n"))
}
