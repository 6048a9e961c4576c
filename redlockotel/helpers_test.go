package redlockotel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockotel"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// providers returns a MeterProvider read by hand and a TracerProvider that records spans.
func providers() (*sdkmetric.MeterProvider, *sdkmetric.ManualReader, *sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), reader,
		sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), spans
}

// A world is n miniredis nodes and an instrumented Client over them, with what it reports.
type world struct {
	nodes  []*miniredis.Miniredis
	client *redlock.Client
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

// newWorld starts it; t.Cleanup closes the Client first, then the providers and the nodes.
func newWorld(t *testing.T, n int, otelOpts []redlockotel.Option, opts ...redlock.Option) *world {
	t.Helper()
	mp, reader, tp, spans := providers()
	w := &world{reader: reader, spans: spans, tp: tp}
	var clients []redis.UniversalClient
	for range n {
		m := miniredis.RunT(t)
		w.nodes = append(w.nodes, m)
		clients = append(clients, redisClient(t, m.Addr()))
	}
	otelOpts = append([]redlockotel.Option{redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp)}, otelOpts...)
	obs, err := redlockotel.Observer(otelOpts...)
	if err != nil {
		t.Fatal(err)
	}
	// A node timeout generous enough for a loaded machine running -race, unless opts set one.
	opts = append([]redlock.Option{redlock.WithObserver(obs), redlock.WithNodeTimeout(2 * time.Second)}, opts...)
	c, err := redlock.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	w.client = c
	t.Cleanup(func() {
		c.Close()
		mp.Shutdown(context.Background())
		tp.Shutdown(context.Background())
	})
	return w
}

// redisClient returns a client of addr that fails at once rather than retry; t.Cleanup closes it.
func redisClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// points collects the metrics and returns each data point, keyed by its name and attributes
// as in `redlock.lost{redlock.kind=mutex}`: a sum's value, a histogram's count.
func (w *world) points(t *testing.T) map[string]float64 {
	t.Helper()
	return points(t, w.reader)
}

func points(t testing.TB, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != redlockotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Count)
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func labels(s attribute.Set) string {
	if s.Len() == 0 {
		return ""
	}
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// lines renders points as sorted lines "key value".
func lines(ps map[string]float64) []string {
	var out []string
	for k, v := range ps {
		out = append(out, fmt.Sprintf("%s %g", k, v))
	}
	slices.Sort(out)
	return out
}
