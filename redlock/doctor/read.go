package doctor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/nodecall"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A reading is what Check read from one node; judge weighs the readings.
type reading struct {
	node int
	addr string
	cmd  Commander // nil when the node sends no commands of its own
	none string    // why cmd is nil
	vote *slot     // where NewCluster's vote lives, nil for any other node
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
func (c *doctor) window(d time.Duration) window {
	return window{until: c.clock.Now().Add(d), every: min(max(d/samplesWanted, minPause), maxPause), bound: max(d, 2*c.nodeTimeout)}
}

// readAll reads every node at once, within w.
func (c *doctor) readAll(ctx context.Context, w window) []*reading {
	rs := make([]*reading, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		r := &reading{node: i, addr: c.addrs[i]}
		if p, ok := n.(placed); ok {
			tag, master := p.Slot()
			r.vote = &slot{tag: tag, master: master, at: len(c.names.Prefix())}
		}
		r.cmd, r.none = commander(n)
		rs[i] = r
		wg.Go(func() { c.readNode(ctx, r, w) })
	}
	wg.Wait()
	return rs
}

// A placed node is a vote of NewCluster (goredisnode.Votes): the key space of one cluster in
// the slot of its tag, which master served when the vote was placed.
type placed interface{ Slot() (tag, master string) }

// A slot is where a vote lives: the hash tag, braces included, that every key of the vote has
// after the prefix (at), and the master that served it when the vote was placed.
type slot struct {
	tag, master string
	at          int
}

// in returns key in the slot: with the tag after the prefix.
func (s *slot) in(key string) string { return key[:s.at] + s.tag + key[s.at:] }

// commander returns n as a Commander, or nil and why it is none.
func commander(n driver.Node) (Commander, string) {
	if cmd, ok := n.(Commander); ok {
		return cmd, ""
	}
	return nil, "its client runs scripts only (it is no doctor.Commander)"
}

// readNode reads node r within w: whether it answers at all (a PING, or for a node without
// commands of its own a script), which also readies a connection for the samples; then whether
// it takes a write and, with commands, its configuration; and then its TIME until w ends.
func (c *doctor) readNode(ctx context.Context, r *reading, w window) {
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
func (c *doctor) reach(ctx context.Context, r *reading, bound time.Duration) error {
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
func (c *doctor) readFacts(ctx context.Context, r *reading, bound time.Duration) {
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
