package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/doctor"
)

const doctorUsage = `usage: redlock doctor (--nodes URL,URL,... | --cluster URL --votes N) [--for D] [-json]

Checks the nodes against every assumption the Redlock guarantee rests on, reading each node
for --for: role (independent masters, no replicas), write (a write goes through: no
READONLY, NOREPLICAS, MISCONF or OOM), identity (no server given twice; with --cluster, the
votes' slots), persistence, eviction, clock (rate against this machine's, and offsets),
latency (against --node-timeout), commands (none renamed) and acl (ACL DRYRUN on every kind
of key and channel the library touches under the prefix); and for the whole set, quorum (the
nodes that count as votes). A node that does not answer
gets a line of its own, reach, and the others are still checked. Each line says ok, warn or
fail, and for warn and fail what to change. -json prints one object a line:
{"node": N, "addr": URL, "check": NAME, "verdict": "ok"|"warn"|"fail", "detail": TEXT},
node -1 for the whole set. Passwords never show.

Exit status:
  0      nothing failed (warnings allowed)
  1      a check failed
  2      bad flags or URLs
  75     fewer than a quorum of the nodes answered, or the --cluster did not answer
  77     so many nodes refused the credentials or failed TLS that no quorum is possible

`

// A doctorRun is one run of redlock doctor.
type doctorRun struct {
	nodeFlags
	nodes []node // the nodes the flags name
	d     time.Duration
	json  bool
}

// flagSet returns the flags of redlock doctor (see newFlagSet), set into dr when parsed.
func (dr *doctorRun) flagSet() *flag.FlagSet {
	fs := newFlagSet("redlock doctor", doctorUsage)
	dr.register(fs)
	fs.DurationVar(&dr.d, "for", 3*time.Second, "how long to read the nodes: their clocks' rates and their round trips are sampled over it")
	fs.BoolVar(&dr.json, "json", false, "print one JSON object a finding, a line each")
	return fs
}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var dr doctorRun
	if code, done := parseCommandLine(&dr, args, stdout, stderr); done {
		return code
	}
	return dr.run(ctx, stdout, stderr)
}

// checkArgs checks the flags and reads the nodes (see subcommand).
func (dr *doctorRun) checkArgs(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case dr.d <= 0:
		return fmt.Errorf("--for %v must be positive", dr.d)
	}
	var err error
	dr.nodes, err = dr.parse()
	return err
}

// run checks the nodes, prints the findings and returns the exit status. With --nodes, a PING
// of every node, as exec's, runs beside the checks: it tells credentials refused and TLS that
// fails apart, and it waits for a node no longer than Check does (the node timeout, twice for
// a TLS node that fails), so that the command keeps Check's bound. With --cluster, it comes
// first: the votes cannot be placed on a cluster that refuses the credentials.
func (dr *doctorRun) run(ctx context.Context, stdout, stderr io.Writer) int {
	nodes, cs := dr.nodes, clients(dr.nodes)
	defer closeClients(cs)
	if dr.cluster != "" {
		pinged := ping(ctx, cs, nodes, dr.nodeTimeout)
		if noPerm(pinged) {
			fmt.Fprintf(stderr, "redlock doctor: %s: %v\n", nodes[0].name, pinged[0])
			return exitNoPerm
		}
		votes, _, err := dr.expand(ctx, nodes, cs)
		if err != nil {
			fmt.Fprintf(stderr, "redlock doctor: %v\n", err)
			return exitTempFail
		}
		up, err := dr.check(ctx, cs)
		return dr.report(up, err, votes, nil, stdout, stderr)
	}
	var pinged []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		pinged = ping(ctx, cs, nodes, dr.nodeTimeout)
	}()
	up, err := dr.check(ctx, cs)
	<-done
	return dr.report(up, err, nodes, pinged, stdout, stderr)
}

// noPerm reports whether so many nodes refused the credentials or failed TLS, by their
// PINGs' errors, that no quorum is possible.
func noPerm(pinged []error) bool {
	refused := 0
	for _, err := range pinged {
		if authFailure(err) {
			refused++
		}
	}
	return len(pinged)-refused < quorum.Of(len(pinged))
}

// report prints what Check found on nodes, each node's failure to answer told as its PING's
// (pinged, nil for none), and returns the exit status.
func (dr *doctorRun) report(up doctor.Checkup, err error, nodes []node, pinged []error, stdout, stderr io.Writer) int {
	if len(up.Findings) == 0 {
		fmt.Fprintf(stderr, "redlock doctor: %v\n", err)
		return exitTempFail
	}
	for i, f := range up.Findings {
		if f.Check == "reach" && f.Node < len(pinged) && pinged[f.Node] != nil {
			up.Findings[i].Detail = "no answer: " + pinged[f.Node].Error() // explained (TLS), as exec says it
		}
	}
	if dr.json {
		printFindingsJSON(stdout, up, nodes)
	} else {
		printFindings(stdout, up, nodes, dr.d)
	}
	if pinged != nil && noPerm(pinged) {
		return exitNoPerm
	}
	return doctorStatus(up, len(nodes))
}

// check checks for dr.d the nodes a Client over cs would have, as exec would make it.
func (dr *doctorRun) check(ctx context.Context, cs []redis.UniversalClient) (doctor.Checkup, error) {
	nodes, err := dr.lockNodes(ctx, cs)
	if err != nil {
		return doctor.Checkup{}, err
	}
	return doctor.Check(ctx, doctor.Setup{Nodes: nodes, NodeTimeout: dr.nodeTimeout, DriftFactor: driftFactor, KeyPrefix: dr.prefix}, dr.d)
}

// doctorStatus is the exit status for up, over n nodes: the quorum's first.
func doctorStatus(up doctor.Checkup, n int) int {
	unreached := 0
	for _, f := range up.Findings {
		if f.Check == "reach" {
			unreached++
		}
	}
	switch {
	case n-unreached < quorum.Of(n):
		return exitTempFail
	case up.Verdict == doctor.Fail:
		return 1
	}
	return 0
}

// printFindings writes the nodes, the table of findings and the summary.
func printFindings(w io.Writer, up doctor.Checkup, nodes []node, d time.Duration) {
	for i, n := range nodes {
		fmt.Fprintf(w, "node %d: %s\n", i, n.name)
	}
	fmt.Fprintf(w, "%s, quorum %d, read for %v\n\n", count(len(nodes), "node"), quorum.Of(len(nodes)), d)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCHECK\tVERDICT\tDETAIL")
	for _, f := range up.Findings {
		node := "-"
		if f.Node >= 0 {
			node = strconv.Itoa(f.Node)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", node, f.Check, f.Verdict, f.Detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", up.Summary())
}

// A finding is one line of redlock doctor -json.
type finding struct {
	Node    int    `json:"node"`
	Addr    string `json:"addr"` // the node's redacted URL, "" for the whole set
	Check   string `json:"check"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

func printFindingsJSON(w io.Writer, up doctor.Checkup, nodes []node) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "&app:*" as it is
	for _, f := range up.Findings {
		line := finding{Node: f.Node, Check: f.Check, Verdict: f.Verdict.String(), Detail: f.Detail}
		if f.Node >= 0 && f.Node < len(nodes) {
			line.Addr = nodes[f.Node].name
		}
		enc.Encode(line)
	}
}

// statusCheck is how long redlock status reads the nodes for the doctor's summary.
const statusCheck = 300 * time.Millisecond

// diagnose checks the nodes briefly, as redlock doctor does, and when a check fails prints
// the doctor's one-line summary on w.
func (f *nodeFlags) diagnose(ctx context.Context, cs []redis.UniversalClient, w io.Writer) {
	dr := doctorRun{nodeFlags: *f, d: statusCheck}
	up, _ := dr.check(ctx, cs)
	if up.Verdict == doctor.Fail {
		fmt.Fprintf(w, "doctor: %s; run redlock doctor for the details\n", up.Summary())
	}
}
