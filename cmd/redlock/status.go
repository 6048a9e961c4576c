package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
)

// nodeStatus is what one node says about the key.
type nodeStatus struct {
	Node      int    `json:"node"`
	URL       string `json:"url"`              // redacted; with --cluster, the vote's tag and master
	Master    string `json:"master,omitempty"` // with --cluster, the master that serves the vote
	Reachable bool   `json:"reachable"`
	Held      bool   `json:"held"`
	Handed    bool   `json:"handed,omitempty"`  // held for a waiting call that has not taken it yet
	TTLMillis int64  `json:"ttl_ms,omitempty"`  // remaining; -1 when the key has no expiry
	Holder    string `json:"holder,omitempty"`  // the token, shortened
	Owner     string `json:"owner,omitempty"`   // the owner stored with the token (redlock exec --owner)
	Fence     uint64 `json:"fence,omitempty"`   // the key's fencing counter on the node (redlock exec --fence)
	Refused   bool   `json:"refused,omitempty"` // the node refused the credentials
	Error     string `json:"error,omitempty"`

	token string // in full, for the verdict only
}

// lockStatus is the whole picture: every node and the verdict.
type lockStatus struct {
	Key     string       `json:"key"`
	Cluster string       `json:"cluster,omitempty"` // with --cluster, its redacted URL: the nodes are its votes
	Quorum  int          `json:"quorum"`
	Verdict string       `json:"verdict"` // held, handed, free, split or unknown
	Holder  string       `json:"holder,omitempty"`
	Owner   string       `json:"owner,omitempty"` // the holder's owner (redlock exec --owner)
	Votes   int          `json:"votes"`           // nodes holding the most common token
	Nodes   []nodeStatus `json:"nodes"`
}

// The verdicts. A lock is held when one token is on a quorum of nodes, handed when a release
// left it to a waiting call on a quorum of nodes and the call has not taken it yet, free when a
// quorum of nodes answered and none holds the key, split when some node holds it but no token
// has a quorum, and unknown when too few nodes answered to tell held from free.
const (
	verdictHeld    = "held"
	verdictHanded  = "handed"
	verdictFree    = "free"
	verdictSplit   = "split"
	verdictUnknown = "unknown"
)

// statusConfig is what the command line asks redlock status to show.
type statusConfig struct {
	nodeFlags
	nodes    []node // the flags name
	key      string
	election string
	ttl      time.Duration // the election's
	json     bool
}

// flagSet returns the flags of redlock status (see newFlagSet), set into s when parsed.
func (s *statusConfig) flagSet() *flag.FlagSet {
	fs := newFlagSet("redlock status", statusUsage)
	s.register(fs)
	registerKey(fs, &s.key)
	fs.StringVar(&s.election, "election", "", "instead of --key, the `name` of an election: show its leader")
	fs.DurationVar(&s.ttl, "ttl", 10*time.Second, "with --election, the ttl its candidates campaign with: the time left allows for its clock drift")
	fs.BoolVar(&s.json, "json", false, "print the status as JSON")
	return fs
}

// checkArgs checks the flags and reads the nodes (see subcommand).
func (s *statusConfig) checkArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	switch {
	case s.key != "" && s.election != "":
		return errors.New("give --key or --election, not both")
	case s.election != "":
		err = checkName("--election", s.election)
		if err == nil {
			err = checkTTL(s.ttl)
		}
	default:
		err = checkName("--key", s.key)
	}
	if err != nil {
		return err
	}
	s.nodes, err = s.parse()
	return err
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var s statusConfig
	if code, done := parseCommandLine(&s, args, stdout, stderr); done {
		return code
	}
	cs := clients(s.nodes)
	defer closeClients(cs)
	defer s.diagnose(ctx, cs, stderr) // after the status, and before the clients close
	if s.election != "" {
		return s.showLeader(ctx, s.nodes, cs, stdout, stderr)
	}
	return s.showKey(ctx, s.nodes, cs, stdout, stderr)
}

// showKey prints the state of --key on every node and the verdict, and returns the exit status.
func (s *statusConfig) showKey(ctx context.Context, nodes []node, cs []redis.UniversalClient, stdout, stderr io.Writer) int {
	cluster := ""
	if s.cluster != "" {
		cluster = nodes[0].name
	}
	nodes, vcs, err := s.expand(ctx, nodes, cs)
	if err != nil {
		fmt.Fprintf(stderr, "redlock status: %v\n", err)
		return 1
	}
	names, _ := wire.NewNames(s.prefix) // checked by parse
	st := inspect(ctx, vcs, nodes, stored{names, s.key}, s.nodeTimeout)
	st.Key, st.Cluster = s.key, cluster
	if s.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(st)
	} else {
		printStatus(stdout, st)
	}
	if st.Verdict == verdictUnknown {
		return 1
	}
	return 0
}

const statusUsage = `usage: redlock status (--nodes URL,URL,... | --cluster URL --votes N) --key NAME [-json]
       redlock status (--nodes URL,URL,... | --cluster URL --votes N) --election NAME [--ttl D] [-json]

With --key, shows for every node whether it answered, whether it holds the key, the remaining
TTL and the holder's token (shortened), then the verdict: held (one token on a quorum), handed
(a release left the key to a waiting call on a quorum, which has not taken it yet: state
"handed"), free, split (held on some nodes, no quorum) or unknown (too few nodes answered).
Exit status 0, or 1 when the verdict is unknown.

With --election, shows the election's leader as a quorum of nodes sees it: its value, term
and the time its term has left, or "no leader"; -json prints {"value": V, "term": N, "until":
RFC 3339}, value "" and term 0 for no leader. Exit status 0 with a leader or none, 1 when too
few nodes answered to tell (nothing is printed on stdout then).

It only reads. When a check of redlock doctor fails on the nodes (read for 300ms), its
one-line summary follows on stderr. Exit status 2 for bad flags.

`

// stored names a lock's keys on the nodes.
type stored struct {
	names wire.Names
	key   string
}

// on returns name with the tag of a vote of --cluster, if any, after the prefix, as the vote
// puts it.
func (s stored) on(tag, name string) string {
	n := len(s.names.Prefix())
	return name[:n] + tag + name[n:]
}

// inspect reads the key and its TTL from every node at once and weighs the answers.
func inspect(ctx context.Context, cs []redis.UniversalClient, nodes []node, stored stored, timeout time.Duration) lockStatus {
	st := lockStatus{Quorum: quorum.Of(len(cs)), Nodes: make([]nodeStatus, len(cs))}
	done := make(chan struct{})
	for i, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			st.Nodes[i] = inspectNode(ctx, c, nodes[i], stored, timeout)
			st.Nodes[i].Node, st.Nodes[i].URL, st.Nodes[i].Master = i, nodes[i].name, nodes[i].master
		}()
	}
	for range cs {
		<-done
	}

	votes := map[string]int{}
	reachable, holding := 0, 0
	for _, n := range st.Nodes {
		if n.Reachable {
			reachable++
		}
		if n.Held {
			holding++
			votes[n.token]++
		}
	}
	var best string
	for tok, v := range votes {
		if v > st.Votes || (v == st.Votes && tok < best) {
			best, st.Votes = tok, v
		}
	}
	switch {
	case st.Votes >= st.Quorum && handed(best):
		st.Verdict, st.Holder = verdictHanded, shorten(best)
	case st.Votes >= st.Quorum:
		st.Verdict, st.Holder, st.Owner = verdictHeld, shorten(best), wire.Owner(best)
	case holding > 0:
		st.Verdict = verdictSplit
	case reachable >= st.Quorum:
		st.Verdict = verdictFree
	default:
		st.Verdict = verdictUnknown
	}
	return st
}

// inspectNode reads the key from node n through c; n.tag is that of a vote of --cluster, or
// empty.
func inspectNode(ctx context.Context, c redis.UniversalClient, n node, stored stored, timeout time.Duration) nodeStatus {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var get, fence *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := c.Pipelined(rctx, func(p redis.Pipeliner) error {
		key := stored.on(n.tag, stored.names.Key(stored.key))
		get = p.Get(rctx, key)
		pttl = p.PTTL(rctx, key)
		fence = p.Get(rctx, stored.on(n.tag, stored.names.Companion("fence", stored.key))) // the library's counter for fenced locks
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		err = n.explain(ctx, err, timeout)
		return nodeStatus{Error: err.Error(), Refused: authFailure(err)}
	}
	f, _ := strconv.ParseUint(fence.Val(), 10, 64)
	if errors.Is(get.Err(), redis.Nil) {
		return nodeStatus{Reachable: true, Fence: f}
	}
	tok := get.Val()
	ns := nodeStatus{Reachable: true, Held: true, Handed: handed(tok), Holder: shorten(tok), Owner: wire.Owner(tok), token: tok, Fence: f}
	if d := pttl.Val(); d >= 0 {
		ns.TTLMillis = max(d.Milliseconds(), 1) // a key about to expire still shows as held
	} else {
		ns.TTLMillis = -1
	}
	return ns
}

// handed reports whether a lock key's value is the name of a waiting call that a release
// handed the key to, rather than a holder's token.
func handed(value string) bool {
	_, ok := wire.ParseWaiter(value)
	return ok
}

// shorten keeps enough of a token to tell holders apart and not enough to release their lock.
func shorten(tok string) string {
	const keep = 8
	if len(tok) <= keep+3 {
		return tok
	}
	return tok[:keep] + "..."
}

// printStatus writes st as a table, a line a node (with the columns FENCE and OWNER when a node
// has a fencing counter or the holder an owner), each failed node's error, and the verdict.
func printStatus(w io.Writer, st lockStatus) {
	if st.Cluster != "" {
		fmt.Fprintf(w, "key %q on %s of %s, quorum %d\n", st.Key, count(len(st.Nodes), "vote"), st.Cluster, st.Quorum)
	} else {
		fmt.Fprintf(w, "key %q on %s, quorum %d\n", st.Key, count(len(st.Nodes), "node"), st.Quorum)
	}
	fenced := slices.ContainsFunc(st.Nodes, func(n nodeStatus) bool { return n.Fence != 0 })
	owned := slices.ContainsFunc(st.Nodes, func(n nodeStatus) bool { return n.Owner != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(cols []string, fence, owner string) {
		if fenced {
			cols = append(cols, fence)
		}
		if owned {
			cols = append(cols, owner)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	row([]string{"NODE", "URL", "STATE", "TTL", "HOLDER"}, "FENCE", "OWNER")
	var errs []string
	for _, n := range st.Nodes {
		state, ttl, holder, fence, owner := "free", "-", "-", "-", "-"
		switch {
		case !n.Reachable && n.Refused:
			state = "refused"
			errs = append(errs, fmt.Sprintf("node %d (%s): %s", n.Node, n.URL, n.Error))
		case !n.Reachable:
			state = "unreachable"
			errs = append(errs, fmt.Sprintf("node %d (%s): %s", n.Node, n.URL, n.Error))
		case n.Held && n.TTLMillis < 0:
			state, ttl, holder = "held", "none", n.Holder
		case n.Held:
			state, ttl, holder = "held", (time.Duration(n.TTLMillis) * time.Millisecond).String(), n.Holder
		}
		if n.Handed {
			state = "handed"
		}
		if n.Fence != 0 {
			fence = strconv.FormatUint(n.Fence, 10)
		}
		if n.Owner != "" {
			owner = n.Owner
		}
		row([]string{strconv.Itoa(n.Node), n.URL, state, ttl, holder}, fence, owner)
	}
	tw.Flush()
	for _, e := range errs {
		fmt.Fprintln(w, e)
	}
	printVerdict(w, st)
}

// printVerdict writes st's verdict in a line.
func printVerdict(w io.Writer, st lockStatus) {
	switch st.Verdict {
	case verdictHeld:
		by := st.Holder
		if st.Owner != "" {
			by += " (" + st.Owner + ")"
		}
		fmt.Fprintf(w, "verdict: held on a quorum (%d/%s) by %s\n", st.Votes, count(len(st.Nodes), "node"), by)
	case verdictHanded:
		fmt.Fprintf(w, "verdict: handed on a quorum (%d/%s) to the waiting call %s, which has not taken it yet\n", st.Votes, count(len(st.Nodes), "node"), st.Holder)
	case verdictFree:
		fmt.Fprintln(w, "verdict: free")
	case verdictSplit:
		fmt.Fprintf(w, "verdict: split (held on some nodes, at most %d/%d under one token; quorum is %d)\n", st.Votes, len(st.Nodes), st.Quorum)
	default:
		fmt.Fprintf(w, "verdict: unknown (fewer than %s answered)\n", count(st.Quorum, "node"))
	}
}
