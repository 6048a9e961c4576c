package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/nodecall"
)

// A reading is what Check read from one node; judge weighs the readings.
type reading struct {
	node int
	addr string
	cmd  Commander // nil when the node sends no commands of its own
	none string    // why cmd is nil
	vote *vote     // NewCluster's vote, nil for any other node
	// reach is the node's failure to answer at all; nothing else was read then.
	reach error

	info     map[string]string // INFO's fields
	infoErr  error
	fsync    string // CONFIG GET appendfsync
	fsyncErr error
	missing  []string // needed commands the server does not know
	cmdsErr  error    // COMMAND INFO's failure
	user     string   // ACL WHOAMI
	denied   []string // what ACL DRYRUN refused, and why
	aclErr   error
	cluster  clusterReading // a vote's cluster
	wrote    error          // the write probe's refusal, or why it had no reply; nil when it wrote
	samples  []sample
}

// A window is how a Check reads its nodes: it samples them until until, every so often, and
// waits for one call at most bound.
type window struct {
	until        time.Time
	every, bound time.Duration
}

// window returns the window of a Check that samples for d, from now on.
func (c *Client) window(d time.Duration) window {
	return window{until: c.clock.Now().Add(d), every: min(max(d/samplesWanted, minPause), maxPause), bound: max(d, 2*c.nodeTimeout)}
}

// readAll reads every node at once, within w.
func (c *Client) readAll(ctx context.Context, w window) []*reading {
	rs := make([]*reading, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		r := &reading{node: i, addr: c.addrs[i]}
		r.vote, _ = n.(*vote)
		r.cmd, r.none = commander(n)
		rs[i] = r
		wg.Go(func() { c.readNode(ctx, r, w) })
	}
	wg.Wait()
	return rs
}

// commander returns n as a Commander, or nil and why it is none. A vote sends its commands to
// the master that serves its slot.
func commander(n Node) (Commander, string) {
	if v, ok := n.(*vote); ok {
		if g, ok := v.Node.(*goredisNode); ok {
			return &voteCommander{vote: v, node: g}, ""
		}
		n = v.Node
	}
	if cmd, ok := n.(Commander); ok {
		return cmd, ""
	}
	return nil, "its client runs scripts only (it is no redlock.Commander)"
}

// readNode reads node r within w: whether it answers at all (a PING, or for a node without
// commands of its own a script), which also readies a connection for the samples; then whether
// it takes a write and, with commands, its configuration; and then its TIME until w ends.
func (c *Client) readNode(ctx context.Context, r *reading, w window) {
	if r.reach = c.reach(ctx, r, w.bound); r.reach != nil {
		return
	}
	// The write first, alone: beside the facts, its second round trip (EVAL after EVALSHA's
	// NOSCRIPT) waits behind their batches, which on a node 600 ms away took it past its bound.
	r.wrote = c.tryWrite(ctx, r, w.bound)
	if r.cmd != nil {
		c.readFacts(ctx, r, w.bound)
	}
	c.sample(ctx, r, w)
}

// reach returns why node r does not answer at all, nil when it does. A PING refused with MISCONF
// is an answer: a node whose background save failed refuses PING as it refuses writes, and the
// write check names it.
func (c *Client) reach(ctx context.Context, r *reading, bound time.Duration) error {
	if r.cmd != nil {
		_, err := within(ctx, bound, func(ctx context.Context) (any, error) { return r.cmd.Command(ctx, "PING") })
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			r.cmd, r.none = nil, "its client sends commands to no one server ("+err.Error()+")"
		case err != nil && replyCode(err) != "MISCONF":
			return err
		default:
			return nil
		}
	}
	_, err := within(ctx, bound, func(ctx context.Context) (any, error) { return c.evalTime(ctx, r) })
	return err
}

// readFacts reads what the node's configuration says, with every command at once.
func (c *Client) readFacts(ctx context.Context, r *reading, bound time.Duration) {
	ask := func(args ...string) (any, error) {
		return within(ctx, bound, func(ctx context.Context) (any, error) { return r.cmd.Command(ctx, args...) })
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		v, err := ask("INFO")
		if err == nil {
			r.info, err = infoFields(v)
		}
		r.infoErr = err
	})
	wg.Go(func() {
		v, err := ask("CONFIG", "GET", "appendfsync")
		if err == nil {
			r.fsync, err = configValue(v, "appendfsync")
		}
		r.fsyncErr = err
	})
	wg.Go(func() { r.missing, r.cmdsErr = missingCommands(ask) })
	wg.Go(func() { r.user, r.denied, r.aclErr = c.dryRun(r, ask) })
	if r.vote != nil {
		wg.Go(func() { r.cluster = readCluster(r.vote, ask) })
	}
	wg.Wait()
}

// within runs call with a context that ends after bound, and returns by then whatever call
// does: a node's client may not end a call by its context.
func within(ctx context.Context, bound time.Duration, call func(context.Context) (any, error)) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	v, err := nodecall.ByDeadline(ctx, call)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = late(bound)
	}
	return v, err
}

// errLate is a call that had no reply within its bound (see late).
var errLate = errors.New("no reply")

func late(bound time.Duration) error { return fmt.Errorf("%w within %v", errLate, bound) }
