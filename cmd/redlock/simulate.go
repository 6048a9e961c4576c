package main

import (
	"context"
	"crypto/rand"
	bin "encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/simulate"
)

// runSimulate is `redlock simulate`. A Ctrl-C (or SIGTERM) stops the runs; the real backend's
// servers are stopped before it returns.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pattern := fs.String("scenario", "*", "run the scenarios whose name matches this glob, or one of these comma-separated globs")
	seed := fs.Uint64("seed", 0, "seed of the first run; 0 picks one at random (printed)")
	runs := fs.Int("runs", 1, "runs of each scenario, with seeds seed, seed+1, ...")
	stock := fs.Int("stock", 0, "override each scenario's stock when positive: more critical sections, a longer run")
	asJSON := fs.Bool("json", false, "print one JSON object per run instead of the table")
	timeline := fs.String("timeline", "", "draw every run into this SVG file")
	metrics := fs.String("metrics", "", "draw the p50/p90/p99 of redlock.acquire.duration over each run into this SVG file, from the clients' observer hook")
	scale := fs.Float64("scale", 0.05, "time scale: the 10 s TTL of the scenarios becomes 10s*scale of real time")
	parallel := fs.Int("parallel", 2, "runs at once; more than the cores makes real-time runs late")
	list := fs.Bool("list", false, "list the scenarios and exit")
	backendName := fs.String("backend", "mini", "mini: in-memory Redis nodes; real: redis-server processes with real faults (needs "+simulate.InstallHint+")")
	server := fs.String("redis-server", "", "with -backend real: the redis-server binary to run (default: redis-server in PATH)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: redlock simulate [flags]\n\nRuns each scenario of the catalog (Redis nodes, faults, clients running a flash sale)\nand checks in true time that no two clients held the lock at once. The nodes are\nin-memory servers, or with -backend real redis-server processes that it starts on free\nloopback ports and stops, with real faults (signals, a TCP proxy, libfaketime).\nExit status 1 when a scenario's outcome differs from its expectation; 2 on bad flags,\nor when -backend real lacks redis-server or libfaketime.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "redlock simulate: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if *runs < 1 {
		return bad("-runs %d: want at least 1", *runs)
	}
	if *parallel < 1 {
		return bad("-parallel %d: want at least 1", *parallel)
	}
	if !(*scale > 0 && *scale <= 1) {
		return bad("-scale %v: want 0 < scale <= 1", *scale)
	}
	if *backendName != "mini" && *backendName != "real" {
		return bad("-backend %q: want mini or real", *backendName)
	}
	var scenarios []simulate.Scenario
	for _, p := range strings.Split(*pattern, ",") {
		matched, err := simulate.Match(p)
		if err != nil {
			return bad("-scenario %q: %v", p, err)
		}
		for _, sc := range matched {
			if !slices.ContainsFunc(scenarios, func(s simulate.Scenario) bool { return s.Name == sc.Name }) {
				scenarios = append(scenarios, sc)
			}
		}
	}
	if len(scenarios) == 0 {
		return bad("-scenario %q matches no scenario (see -list)", *pattern)
	}
	if *list {
		for _, sc := range scenarios {
			fmt.Fprintf(stdout, "%-28s %-9s %s\n", sc.Name, sc.Expect, sc.Row)
		}
		return 0
	}
	if *seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		*seed = bin.LittleEndian.Uint64(b[:]) >> 1
	}
	var backend simulate.Backend = simulate.Mini{}
	if *backendName == "real" {
		rb, err := simulate.Real{Server: *server}.Check(scenarios...)
		if err != nil {
			fmt.Fprintf(stderr, "redlock simulate: %v\n", err)
			return 2
		}
		backend = rb
	}
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	began := time.Now()
	fmt.Fprintf(stderr, "redlock simulate: backend %s, seed %d, %d scenario(s) x %d run(s), TTL %v of real time\n",
		backend, *seed, len(scenarios), *runs, time.Duration(float64(simulate.TTL)**scale))
	type job struct {
		sc   simulate.Scenario
		seed uint64
	}
	var jobs []job
	for _, sc := range scenarios {
		for i := range *runs {
			jobs = append(jobs, job{sc, *seed + uint64(i)})
		}
	}
	results := make([]simulate.Result, len(jobs))
	var (
		mu   sync.Mutex // orders the progress lines
		done int
		wg   sync.WaitGroup
		sem  = make(chan struct{}, *parallel)
	)
	for i, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			began := time.Now()
			res := simulate.Run(ctx, j.sc, simulate.Options{Seed: j.seed, Scale: *scale, Backend: backend, Metrics: *metrics != "", Stock: *stock})
			results[i] = res
			verdict := "ok"
			switch {
			case !res.OK:
				verdict = "UNEXPECTED " + res.Note
			case res.Observed == simulate.VerdictNotReproducible:
				verdict = "not reproducible on " + res.Backend + ": " + res.Note
			}
			mu.Lock()
			defer mu.Unlock()
			done++
			fmt.Fprintf(stderr, "[%d/%d] %-26s seed %-20d expected %-9s observed %-12s %s (%v)\n",
				done, len(jobs), j.sc.Name, j.seed, res.Expected, res.Observed, verdict, time.Since(began).Round(10*time.Millisecond))
			for _, line := range res.Schedule {
				fmt.Fprintf(stderr, "        %s\n", line)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "redlock simulate: interrupted; every server it started is stopped")
		return 1
	}
	fmt.Fprintf(stderr, "redlock simulate: %d run(s) on %s in %v\n", len(jobs), backend, time.Since(began).Round(100*time.Millisecond))

	var err error
	if *asJSON {
		err = simulate.WriteJSON(stdout, results)
	} else {
		err = simulate.WriteTable(stdout, results)
	}
	if err == nil && *timeline != "" {
		err = writeSVG(*timeline, simulate.WriteSVG, results)
	}
	if err == nil && *metrics != "" {
		err = writeSVG(*metrics, simulate.WriteMetricsSVG, results)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlock simulate: %v\n", err)
		return 1
	}
	var unexpected []string
	for _, r := range results {
		if !r.OK {
			unexpected = append(unexpected, fmt.Sprintf("%s (seed %d)", r.Scenario, r.Seed))
		}
	}
	if len(unexpected) > 0 {
		fmt.Fprintf(stderr, "redlock simulate: outcome differs from the expectation: %s\n", strings.Join(unexpected, ", "))
		return 1
	}
	return 0
}

// writeSVG writes rs into the file name with draw.
func writeSVG(name string, draw func(io.Writer, []simulate.Result) error, rs []simulate.Result) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := draw(f, rs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
