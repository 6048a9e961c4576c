// Command benchreport writes bench/BENCHMARKS.md and its SVG chart from what make bench left
// in the results directory: raw.txt (go test -bench output of every round), benchstat.txt
// (benchstat's summary of raw.txt) and machine.txt (key: value lines about the run). Every
// figure in the page is a median over the rounds, computed here from raw.txt, except those of
// cases 6 and 8, which are also shown round by round.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "results", "directory holding raw.txt, benchstat.txt and machine.txt")
	notes := flag.String("notes", "", "markdown appended under \"What limits it\" (optional)")
	out := flag.String("out", "BENCHMARKS.md", "the page to write")
	svg := flag.String("svg", "chart.svg", "the chart to write, linked from the page by its base name")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchreport: ")

	res, runs, err := parseRaw(filepath.Join(*dir, "raw.txt"))
	if err != nil {
		log.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join(*dir, "benchstat.txt"))
	if err != nil {
		log.Fatal(err)
	}
	machine, err := os.ReadFile(filepath.Join(*dir, "machine.txt"))
	if err != nil {
		log.Fatal(err)
	}
	var limits []byte
	if *notes != "" {
		if limits, err = os.ReadFile(*notes); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.WriteFile(*svg, []byte(chart(res)), 0o644); err != nil {
		log.Fatal(err)
	}
	page := render(res, runs, string(machine), string(stat), string(limits), filepath.Base(*svg))
	if err := os.WriteFile(*out, []byte(page), 0o644); err != nil {
		log.Fatal(err)
	}
}

// results holds every sample: results[case][impl][unit] in the order of the rounds. A case is
// the benchmark name without its impl=... element and GOMAXPROCS suffix.
type results map[string]map[string]map[string][]float64

// add appends a sample.
func (r results) add(c, impl, unit string, v float64) {
	if r[c] == nil {
		r[c] = map[string]map[string][]float64{}
	}
	if r[c][impl] == nil {
		r[c][impl] = map[string][]float64{}
	}
	r[c][impl][unit] = append(r[c][impl][unit], v)
}

// parseRaw returns every sample of raw.txt, and the samples of each run of the test binary
// apart, in order (a run begins with the "goos:" line go test prints first). run.sh runs
// each case in a process of its own once a round, so a case's runs are its rounds.
func parseRaw(path string) (results, []results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	res := results{}
	var runs []results
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "goos:") {
			runs = append(runs, results{})
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		name := fields[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		var parts []string
		impl := ""
		for _, p := range strings.Split(name, "/") {
			if v, ok := strings.CutPrefix(p, "impl="); ok {
				impl = v
			} else {
				parts = append(parts, p)
			}
		}
		if impl == "" {
			continue
		}
		c := strings.Join(parts, "/")
		if runs == nil { // a file without go test's header: one run
			runs = append(runs, results{})
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
			}
			res.add(c, impl, fields[i+1], v)
			runs[len(runs)-1].add(c, impl, fields[i+1], v)
		}
	}
	if len(res) == 0 {
		return nil, nil, fmt.Errorf("%s: no benchmark results", path)
	}
	return res, runs, sc.Err()
}

// median returns the median of the case's samples for impl and unit, and false when there is
// none.
func (r results) median(c, impl, unit string) (float64, bool) {
	vs := slices.Clone(r[c][impl][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], true
	}
	return (vs[n/2-1] + vs[n/2]) / 2, true
}

// rounds returns how many samples the case has for impl.
func (r results) rounds(c, impl string) int { return len(r[c][impl]["ns/op"]) }
