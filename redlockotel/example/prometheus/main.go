// Command prometheus runs redlock clients that contend for one key, instrumented with
// redlockotel, and serves their metrics to Prometheus at /metrics through OpenTelemetry's
// Prometheus exporter.
//
//	go run ./example/prometheus                      # 3 in-memory nodes; serve until interrupted
//	go run ./example/prometheus -nodes a:6379,b:6379,c:6379 -for 10s
//
// With -for, it stops after that long, prints the redlock series in Prometheus's text format
// and exits. Each client is a redlock.Client of its own, as separate processes would have; it
// tries the lock, and when that is refused waits for it with Do, holding it for -work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockotel"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "prometheus:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prometheus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9464", "serve /metrics here")
	addrs := fs.String("nodes", "", "Redis masters, comma-separated; empty: 3 in-memory ones")
	clients := fs.Int("clients", 4, "contending clients")
	work := fs.Duration("work", 5*time.Millisecond, "how long each holds the lock")
	ttl := fs.Duration("ttl", time.Second, "the lock's ttl")
	runFor := fs.Duration("for", 0, "stop after this long and print the metrics; 0: until interrupted")
	nodeTimeout := fs.Duration("node-timeout", 100*time.Millisecond, "how long a call waits for one node (redlock.WithNodeTimeout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *clients < 1 || *work < 0 || *ttl <= 0 || *runFor < 0 || *nodeTimeout <= 0 {
		return errors.New("-clients ≥ 1, -work ≥ 0, -ttl > 0, -for ≥ 0 and -node-timeout > 0, please")
	}
	redis.SetLogger(quiet{})

	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())

	nodes := strings.Split(*addrs, ",")
	if *addrs == "" {
		nodes = nil
		for range 3 {
			m := miniredis.NewMiniRedis()
			if err := m.Start(); err != nil {
				return err
			}
			defer m.Close()
			nodes = append(nodes, m.Addr())
		}
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "serving http://%s/metrics; %d clients contend on %d nodes\n", ln.Addr(), *clients, len(nodes))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	obs, err := redlockotel.Observer(redlockotel.WithMeterProvider(mp))
	if err != nil {
		return err
	}
	err = contend(ctx, nodes, *clients, *ttl, *work, redlock.WithObserver(obs), redlock.WithNodeTimeout(*nodeTimeout))
	srv.Shutdown(context.Background())
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil || *runFor == 0 {
		return err
	}
	return printMetrics(stdout, reg)
}

// contend runs the clients until ctx ends, and closes them.
func contend(ctx context.Context, addrs []string, clients int, ttl, work time.Duration, opts ...redlock.Option) error {
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for i := range clients {
		var nodes []redis.UniversalClient
		for _, a := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			defer rdb.Close()
			nodes = append(nodes, rdb)
		}
		c, err := redlock.New(nodes, opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		wg.Go(func() { errs[i] = client(ctx, c, ttl, work) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// client takes the lock over and over until ctx ends: TryLock, and when refused, Do.
func client(ctx context.Context, c *redlock.Client, ttl, work time.Duration) error {
	hold := func(context.Context) error {
		t := time.NewTimer(work)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	for ctx.Err() == nil {
		l, err := c.TryLock(ctx, "report", ttl)
		if err == nil {
			hold(ctx)
			err = l.Unlock(context.WithoutCancel(ctx))
		} else if errors.Is(err, redlock.ErrNotAcquired) {
			err = c.Do(ctx, "report", ttl, hold)
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// printMetrics writes the registry's series in Prometheus's text format.
func printMetrics(w io.Writer, reg *prometheus.Registry) error {
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
