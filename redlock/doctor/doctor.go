// Package doctor checks a deployment of redlock against every assumption the Redlock
// guarantee rests on (docs/locks.md lists them): that the nodes are independent masters that
// take writes, keep their keys, have clocks that run at one rate, answer within the node
// timeout, and let the connection's user run what the library sends. redlock doctor and redlock
// status run it; Check runs it from Go.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// A Verdict is how a deployment stands against one assumption of the Redlock guarantee.
type Verdict int

const (
	OK   Verdict = iota // the assumption holds
	Warn                // it holds with a caveat that the finding names, or it could not be checked
	Fail                // it does not hold: locks are not safe, or not available, until it does
)

func (v Verdict) String() string {
	switch v {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// A Finding is one verdict of Check: on one node, or on the whole set of nodes, against
// one assumption.
type Finding struct {
	Node int    // the node's index in the Client's nodes; -1 for the whole set
	Addr string // the node's address as errors name it (see redlock.NodeError), "" for the whole set
	// Check names the assumption: role, write, identity, persistence, eviction, clock,
	// latency, commands, acl, quorum (the whole set) or reach (a node that did not answer at
	// all).
	Check   string
	Verdict Verdict
	Detail  string // what was seen; for Warn and Fail, what it means and what to change
}

// A Checkup is what Check found.
type Checkup struct {
	Verdict  Verdict   // the worst of the findings'
	Findings []Finding // node by node, each node's in the order Finding.Check lists the checks, then the whole set's
}

// The checks' names, as Finding.Check gives them.
const (
	checkRole        = "role"
	checkWrite       = "write"
	checkIdentity    = "identity"
	checkPersistence = "persistence"
	checkEviction    = "eviction"
	checkClock       = "clock"
	checkLatency     = "latency"
	checkCommands    = "commands"
	checkACL         = "acl"
	checkQuorum      = "quorum"
	checkReach       = "reach"
)

// Check reads every node for about d and reports, per node and per assumption that the Redlock
// guarantee rests on, whether it holds (docs/locks.md lists them):
//
//   - role: the node is a master, not a replica, and replicates from no other node given (a
//     writable replica takes writes and votes, but a resync from its master wipes its keys);
//   - write: the node takes a write (a script's SET and DEL of a key that no lock has, under
//     the prefix): a node that refuses it (READONLY, NOREPLICAS, MISCONF, OOM, NOPERM) fails,
//     naming the reason, and counts as no vote;
//   - identity: no server is given twice (under two addresses); with NewCluster, each vote's
//     slot is served by a master of its own, where the Client placed it;
//   - persistence: AOF with appendfsync always, or else a warning to delay the node's restarts
//     by the longest ttl in use;
//   - eviction: no maxmemory, or the noeviction policy: any other can evict a lock key;
//   - clock: the node's TIME, sampled over d, runs at the rate of this machine's monotonic
//     clock within the drift factor (WithDriftFactor), and no more than one node's clock is
//     more than a second off the median of the nodes' clocks and this machine's (fencing takes
//     the median of the nodes' clocks);
//   - latency: the round trip's 99th percentile over the sampling is under half the node
//     timeout (warn) and under the node timeout (fail);
//   - commands: EVALSHA, EVAL, SET, PUBLISH, SUBSCRIBE, TIME and the commands the scripts call
//     are there, not renamed;
//   - acl: ACL DRYRUN (Redis 7) lets the connection's user run them on the prefix's keys and
//     channels;
//   - quorum, for the whole set: an odd number of at least 3 nodes, and a quorum answering
//     that count as votes: neither refusing writes, nor replicas, nor a server given before.
//
// A node that does not answer gets a single finding, reach, and the others are checked all the
// same. A node that is no Commander is checked for reach, write, clock and latency through
// scripts, and gets a warning for each check that needs a command of its own.
//
// Check waits for a node at most d or twice the node timeout, whichever is longer. Its error is
// non-nil for a d that is not positive, a Setup that redlock.NewNodes would refuse, a ctx that
// ended before the checks did, and when no node answered: the Checkup then holds the reach
// findings.
func Check(ctx context.Context, s Setup, d time.Duration) (Checkup, error) {
	if d <= 0 {
		return Checkup{}, fmt.Errorf("redlock: check for %v: want a positive duration", d)
	}
	c, err := newDoctor(s)
	if err != nil {
		return Checkup{}, err
	}
	w := c.window(d)
	rs := c.readAll(ctx, w)
	if err := ctx.Err(); err != nil {
		return Checkup{}, err
	}
	up := c.judge(rs, w)
	var errs []error
	for _, r := range rs {
		if r.reach != nil {
			errs = append(errs, &redlock.NodeError{Node: r.node, Addr: r.addr, Err: r.reach})
		}
	}
	if len(errs) == len(rs) {
		return up, errors.Join(append([]error{errors.New("redlock: no node answered")}, errs...)...)
	}
	return up, nil
}

// maxNamed bounds the failed checks that Summary names.
const maxNamed = 6

// Summary says in one line how the checkup went: "every check passed", "no check failed; 5
// warnings", or "2 of 41 checks failed (node 1 eviction, quorum); 5 warnings".
func (c Checkup) Summary() string {
	var failed []string
	warned := 0
	for _, f := range c.Findings {
		switch {
		case f.Verdict == Fail && f.Node < 0:
			failed = append(failed, f.Check)
		case f.Verdict == Fail:
			failed = append(failed, fmt.Sprintf("node %d %s", f.Node, f.Check))
		case f.Verdict == Warn:
			warned++
		}
	}
	warnings := plural(warned, "warning")
	switch {
	case len(failed) > 0:
		named := strings.Join(failed[:min(len(failed), maxNamed)], ", ")
		if len(failed) > maxNamed {
			named += fmt.Sprintf(" and %d more", len(failed)-maxNamed)
		}
		return fmt.Sprintf("%d of %s failed (%s); %s", len(failed), plural(len(c.Findings), "check"), named, warnings)
	case warned > 0:
		return "no check failed; " + warnings
	}
	return "every check passed"
}

// plural writes n and noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
