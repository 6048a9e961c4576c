package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock"
)

// showLeader prints the leader of --election as a quorum of nodes sees it, and returns the exit
// status: 0 with a leader or none, 1 when too few nodes answered to tell (or the --cluster did
// not); then only stderr says why.
func (s *statusConfig) showLeader(ctx context.Context, nodes []node, cs []redis.UniversalClient, stdout, stderr io.Writer) int {
	cluster := ""
	if s.cluster != "" {
		cluster = nodes[0].name
	}
	nodes, _, err := s.expand(ctx, nodes, cs)
	var locker *redlock.Client
	if err == nil {
		locker, err = s.locker(ctx, cs, redlock.WithNodeTimeout(s.nodeTimeout), redlock.WithKeyPrefix(s.prefix), redlock.WithDriftFactor(driftFactor))
	}
	if err != nil { // the --cluster did not answer: the flags were checked
		fmt.Fprintf(stderr, "redlock status: %v\n", err)
		return 1
	}
	defer locker.Close()
	e, err := locker.Election(s.election, s.ttl) // refuses nothing parse let through
	var l redlock.Leader
	if err == nil {
		l, err = e.Leader(ctx)
	}
	switch {
	case errors.Is(err, redlock.ErrNoLeader):
	case err != nil:
		fmt.Fprintf(stderr, "redlock status: election %q: fewer than %s answered; the leader is unknown\n", s.election, count(quorum.Of(len(nodes)), "node"))
		for _, line := range eachNode(err, nodes) {
			fmt.Fprintf(stderr, "  %s\n", line)
		}
		return 1
	}
	if s.json {
		writeLeaderJSON(stdout, l, "  ")
		return 0
	}
	if cluster != "" {
		fmt.Fprintf(stdout, "election %q on %s of %s, quorum %d\n", s.election, count(len(nodes), "vote"), cluster, quorum.Of(len(nodes)))
	} else {
		fmt.Fprintf(stdout, "election %q on %s, quorum %d\n", s.election, count(len(nodes), "node"), quorum.Of(len(nodes)))
	}
	if l.Term == 0 {
		fmt.Fprintln(stdout, leaderLine(l))
		return 0
	}
	fmt.Fprintf(stdout, "%s (%v left)\n", leaderLine(l), time.Until(l.Until).Round(time.Millisecond))
	return 0
}

// eachNode returns a line for every node, in node order: its failure in err (see describe), or
// "answered" for a node that err does not name.
func eachNode(err error, nodes []node) []string {
	failed := map[int]string{}
	for _, line := range describe(err, nodes) {
		if i, ok := lineNode(line); ok && failed[i] == "" {
			failed[i] = line
		}
	}
	lines := make([]string, len(nodes))
	for i, n := range nodes {
		lines[i] = failed[i]
		if lines[i] == "" {
			lines[i] = fmt.Sprintf("node %d (%s): answered", i, n.name)
		}
	}
	return lines
}
