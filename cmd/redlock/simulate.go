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

const simulateUsage = `usage: redlock simulate [flags]

Runs each scenario of the catalog (Redis nodes, faults, clients running a flash sale) and
checks in true time that no two clients held the lock at once. The nodes are in-memory
servers, or with -backend real redis-server processes that it starts on free loopback ports
and stops, with real faults (signals, a TCP proxy, libfaketime). A run that the machine ran
too late to show anything (its fault missed its window, or its pace shows the machine) is run
again with the next seed at twice the scale (-retries), and says so. Progress goes to stderr,
the table (or -json) to stdout. Exit status 1 when a scenario's outcome differs from its
expectation; 2 on bad flags, or when -backend real lacks redis-server or libfaketime.

flags:
`

// simulateConfig is what the flags of redlock simulate ask for.
type simulateConfig struct {
	patterns  string // comma-separated globs
	seed      uint64 // 0: pick one at random
	runs      int
	retries   int
	stock     int
	json      bool
	timeline  string
	metrics   string
	scale     float64
	parallel  int
	list      bool
	backend   string
	server    string
	scenarios []simulate.Scenario // those patterns match, once each
}

// runSimulate is `redlock simulate`. A Ctrl-C (or SIGTERM) stops the runs; the real backend's
// servers are stopped before it returns.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseSimulate(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlock simulate: %v\nrun 'redlock simulate -h' for usage\n", err)
		return 2
	}
	if cfg.list {
		listScenarios(stdout, cfg.scenarios)
		return 0
	}
	backend, err := cfg.newBackend()
	if err != nil {
		simulateFailed(stderr, err)
		return 2
	}
	redis.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	results, err := cfg.runAll(ctx, backend, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "redlock simulate: interrupted; every server it started is stopped")
		return 1
	}
	if err := cfg.write(stdout, results); err != nil {
		simulateFailed(stderr, err)
		return 1
	}
	return exitStatus(stderr, results)
}

// parseSimulate reads the flags into a configuration and checks it. It returns flag.ErrHelp
// after printing the usage for -h, and otherwise says what is wrong in one error: the caller
// prints it, with no usage to scroll it away.
func parseSimulate(args []string, stderr io.Writer) (simulateConfig, error) {
	var c simulateConfig
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.StringVar(&c.patterns, "scenario", "*", "run the scenarios whose name matches this glob, or one of these comma-separated globs")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the first run; 0 picks one at random (printed above the table)")
	fs.IntVar(&c.runs, "runs", 1, "runs of each scenario, with seeds seed, seed+1, ...")
	fs.IntVar(&c.retries, "retries", 2, "run a scenario again, up to this many times, with the next seed at twice the scale, when the machine ran it too late to show anything: its fault missed its window, or its pace shows the machine; each retry is printed")
	fs.IntVar(&c.stock, "stock", 0, "override each scenario's stock when positive: more critical sections, a longer run")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per run instead of the table")
	fs.StringVar(&c.timeline, "timeline", "", "draw every run into this SVG file")
	fs.StringVar(&c.metrics, "metrics", "", "draw the p50/p90/p99 of redlock.acquire.duration over each run into this SVG file, from the clients' observer hook")
	fs.Float64Var(&c.scale, "scale", 0.05, "time scale: the 10 s TTL of the scenarios becomes 10s*scale of real time (a scenario with a least scale of its own runs at that one when larger)")
	fs.IntVar(&c.parallel, "parallel", 2, "runs at once; more than the cores makes real-time runs late")
	fs.BoolVar(&c.list, "list", false, "list the scenarios and exit")
	fs.StringVar(&c.backend, "backend", "mini", "mini: in-memory Redis nodes; real: redis-server processes with real faults (needs "+simulate.InstallHint+")")
	fs.StringVar(&c.server, "redis-server", "", "with -backend real: the redis-server binary to run (default: redis-server in PATH)")
	fs.SetOutput(io.Discard) // the caller reports a parse error on one line
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		fmt.Fprint(stderr, simulateUsage)
		fs.PrintDefaults()
		return c, err
	}
	if err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := c.check(); err != nil {
		return c, err
	}
	if c.seed == 0 {
		c.seed = randomSeed()
	}
	c.scenarios, err = selectScenarios(c.patterns)
	return c, err
}

// check says what is wrong with the values of the flags.
func (c simulateConfig) check() error {
	switch {
	case c.runs < 1:
		return fmt.Errorf("-runs %d: want at least 1", c.runs)
	case c.retries < 0:
		return fmt.Errorf("-retries %d: want 0 or more", c.retries)
	case c.parallel < 1:
		return fmt.Errorf("-parallel %d: want at least 1", c.parallel)
	case !(c.scale > 0 && c.scale <= 1):
		return fmt.Errorf("-scale %v: want 0 < scale <= 1", c.scale)
	case c.backend != "mini" && c.backend != "real":
		return fmt.Errorf("-backend %q: want mini or real", c.backend)
	}
	return nil
}

// selectScenarios returns the scenarios that match any of the comma-separated globs, each once,
// in the order of the globs.
func selectScenarios(patterns string) ([]simulate.Scenario, error) {
	var scenarios []simulate.Scenario
	for _, p := range strings.Split(patterns, ",") {
		matched, err := simulate.Match(p)
		if err != nil {
			return nil, fmt.Errorf("-scenario %q: %v", p, err)
		}
		for _, sc := range matched {
			if !slices.ContainsFunc(scenarios, func(s simulate.Scenario) bool { return s.Name == sc.Name }) {
				scenarios = append(scenarios, sc)
			}
		}
	}
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("-scenario %q matches no scenario (see -list)", patterns)
	}
	return scenarios, nil
}

// listScenarios writes a line per scenario: its name, its strategy, what it expects, what it does.
func listScenarios(w io.Writer, scenarios []simulate.Scenario) {
	for _, sc := range scenarios {
		strategy := sc.Strategy
		if strategy == "" {
			strategy = simulate.Redlock
		}
		fmt.Fprintf(w, "%-29s  %-18s  %-9s  %s\n", sc.Name, strategy, sc.Expect, sc.Row)
	}
}

// newBackend returns the backend the flags name, the real one checked for what it needs.
func (c simulateConfig) newBackend() (simulate.Backend, error) {
	if c.backend == "mini" {
		return simulate.Mini{}, nil
	}
	return simulate.Real{Server: c.server}.Check(c.scenarios...)
}

// simulateFailed reports err as the command's message. The simulate package's errors start with
// its name, which the command's own prefix already says.
func simulateFailed(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "redlock simulate: %s\n", strings.TrimPrefix(err.Error(), "simulate: "))
}

// A job is one run: a scenario and its seed.
type job struct {
	sc   simulate.Scenario
	seed uint64
}

// runAll runs every scenario -runs times from the seed, -parallel at once, reporting each run on
// stderr as it ends. It returns the results in the order of the scenarios, or ctx's error when
// it was interrupted.
func (c simulateConfig) runAll(ctx context.Context, backend simulate.Backend, stderr io.Writer) ([]simulate.Result, error) {
	var jobs []job
	for _, sc := range c.scenarios {
		for i := range c.runs {
			jobs = append(jobs, job{sc, c.seed + uint64(i)})
		}
	}
	began := time.Now()
	fmt.Fprintf(stderr, "redlock simulate: %d runs of %d scenarios on %s from seed %d; the 10 s TTL lasts %v of real time%s\n",
		len(jobs), len(c.scenarios), backend, c.seed, time.Duration(float64(simulate.TTL)*c.scale), c.slower())
	p := &progress{w: stderr, total: len(jobs), seeds: c.runs > 1}
	o := simulate.Options{Scale: c.scale, Backend: backend, Metrics: c.metrics != "", Stock: c.stock, Retries: c.retries}
	results, err := runJobs(ctx, jobs, o, c.parallel, p)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "redlock simulate: %d runs on %s in %v\n", len(jobs), backend, time.Since(began).Round(100*time.Millisecond))
	return results, nil
}

// slower says how long the TTL lasts in the chosen scenarios that run at a larger scale than
// -scale (their MinScale), and in which; "" when none does.
func (c simulateConfig) slower() string {
	var ttls []time.Duration
	names := map[time.Duration][]string{}
	for _, sc := range c.scenarios {
		if sc.MinScale > c.scale {
			ttl := time.Duration(float64(simulate.TTL) * sc.MinScale)
			if names[ttl] == nil {
				ttls = append(ttls, ttl)
			}
			names[ttl] = append(names[ttl], sc.Name)
		}
	}
	var out []string
	for _, ttl := range ttls {
		out = append(out, fmt.Sprintf("%v in %s", ttl, strings.Join(names[ttl], " and ")))
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ", whose least scale is larger)"
}

// randomSeed returns a seed that fits an int64, as JSON readers want.
func randomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return bin.LittleEndian.Uint64(b[:]) >> 1
}

// runJobs runs the jobs with the options o, at most parallel at once, reporting each to p as it
// ends. It returns the results in the order of the jobs, or ctx's error when ctx ended first.
func runJobs(ctx context.Context, jobs []job, o simulate.Options, parallel int, p *progress) ([]simulate.Result, error) {
	results := make([]simulate.Result, len(jobs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
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
			opts := o
			opts.Seed = j.seed
			results[i] = simulate.Run(ctx, j.sc, opts)
			p.report(results[i], time.Since(began))
		})
	}
	wg.Wait()
	return results, ctx.Err()
}

// progress writes a line on stderr for each run as it ends, with its fault schedule.
type progress struct {
	w     io.Writer
	total int
	seeds bool // the runs have several seeds: name each run's

	mu   sync.Mutex // orders the lines
	done int
}

func (p *progress) report(res simulate.Result, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	name := res.Scenario
	if p.seeds {
		name = fmt.Sprintf("%s, seed %d", name, res.Seed)
	}
	outcome := fmt.Sprintf("%s, as expected", res.Observed)
	switch {
	case res.Observed == simulate.VerdictNotReproducible:
		outcome = "not reproducible on " + res.Backend + ": " + res.Note
	case !res.OK && res.Note != "":
		outcome = fmt.Sprintf("%s, expected %s: UNEXPECTED, %s", res.Observed, res.Expected, res.Note)
	case !res.OK:
		outcome = fmt.Sprintf("%s, expected %s: UNEXPECTED", res.Observed, res.Expected)
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s (%v)\n", p.done, p.total, name, outcome, took.Round(10*time.Millisecond))
	for _, m := range res.Missed {
		fmt.Fprintf(p.w, "        %s\n", simulate.MissLine(m))
	}
	for _, line := range res.Schedule {
		fmt.Fprintf(p.w, "        %s\n", line)
	}
}

// write writes the results to stdout, as a table or JSON lines, and draws the pictures the
// flags ask for.
func (c simulateConfig) write(stdout io.Writer, results []simulate.Result) error {
	write := simulate.WriteTable
	if c.json {
		write = simulate.WriteJSON
	}
	if err := write(stdout, results); err != nil {
		return err
	}
	if c.timeline != "" {
		if err := writeSVG(c.timeline, simulate.WriteSVG, results); err != nil {
			return err
		}
	}
	if c.metrics != "" {
		return writeSVG(c.metrics, simulate.WriteMetricsSVG, results)
	}
	return nil
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

// exitStatus is 1 when a run's outcome differs from its expectation, naming those runs, else 0.
func exitStatus(stderr io.Writer, results []simulate.Result) int {
	var unexpected []string
	for _, r := range results {
		if !r.OK {
			unexpected = append(unexpected, fmt.Sprintf("%s (-seed %d)", r.Scenario, r.Seed))
		}
	}
	if len(unexpected) == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "redlock simulate: outcome differs from the expectation: %s\n", strings.Join(unexpected, ", "))
	return 1
}
