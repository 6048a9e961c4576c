package redlock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// An Inspection is what the nodes hold under a key, as Client.Inspect read it.
type Inspection struct {
	Key   string
	Held  bool        // a quorum holds the key under one token
	Token string      // that token, "" when not Held
	Owner string      // the owner stored with it (WithOwner), "" when none
	Nodes []NodeState // one per node, in the Client's node order
}

// A NodeState is what one node holds under a key.
type NodeState struct {
	Token, Owner string        // "" when the node does not hold the key
	TTL          time.Duration // the key's time left on the node when Inspect returned (see Inspect)
	Fence        uint64        // the key's fencing counter there (WithFencing), 0 for none
	Err          error         // the node's failure, if it did not answer
	// Waiter is the waiting Lock call that a release handed the key to, named as the line
	// names it, until that call takes it (Token is "" meanwhile); "" for none.
	Waiter string
}

// Inspect reads, and only reads, what every node holds under key: the lock of Lock, TryLock, Do
// or LockAll, or else an RWMutex's writer, or else an RWMutex's live readers or a Semaphore's
// live holders (their tokens and owners comma-separated, and the longest time left), with the
// owners that the holders' Clients stored (WithOwner). It waits for each node up to the node
// timeout, whatever the others answered: a node that fails at once (one that refuses
// connections) does not cut the others' answers short. Its error is non-nil only for bad input
// (an empty key) or when no node answered; otherwise every node is in Nodes, one that failed
// with its Err.
//
// A node's TTL is the time its key has left as of Inspect's return, never more: what the node
// said less the time since the read was sent (the node read it later) and less the clock drift
// allowance over it (WithDriftFactor), so that the moment Inspect returns plus TTL is never
// later than the key's expiry on that node; 0 when the key may have expired since.
func (c *Client) Inspect(ctx context.Context, key string) (Inspection, error) {
	if err := c.checkKey(key); err != nil {
		return Inspection{}, err
	}
	replies, start, err := c.read(ctx, wire.Inspect{Mutex: c.opts.names.Mutex(key), RWMutex: c.opts.names.RWMutex(key),
		Semaphore: c.opts.names.Semaphore(key), Value: c.opts.names.Election(key).Value})
	if err != nil {
		return Inspection{}, err
	}
	in := Inspection{Key: key, Nodes: make([]NodeState, len(c.nodes))}
	count := map[string]int{}
	elapsed := c.opts.clock.Now().Sub(start)
	for i, rep := range replies {
		in.Nodes[i] = nodeState(rep)
		if ttl := in.Nodes[i].TTL; ttl > 0 { // as of now, and never later than the node keeps it
			in.Nodes[i].TTL = max(ttl-elapsed-clock.Drift(ttl, c.opts.driftFactor), 0)
		}
		if t := in.Nodes[i].Token; t != "" {
			count[t]++
		}
	}
	for t, n := range count {
		if n >= c.quorum {
			in.Held, in.Token, in.Owner = true, t, ownerOf(t)
		}
	}
	return in, nil
}

// nodeState is what rep, a node's reading, says it holds.
func nodeState(rep quorum.Reply[wire.Reading]) NodeState {
	if rep.Err != nil {
		return NodeState{Err: rep.Err}
	}
	r := rep.Value
	h := r.Lock
	if h.Token == "" {
		h = r.Writer
	}
	if _, ok := wire.ParseWaiter(h.Token); ok {
		return NodeState{Waiter: h.Token, TTL: h.TTL, Fence: r.Fence}
	}
	if h.Token != "" {
		return NodeState{Token: h.Token, Owner: wire.Owner(h.Token), TTL: h.TTL, Fence: r.Fence}
	}
	s := NodeState{Fence: r.Fence}
	var tokens []string
	for _, h := range append(r.Readers, r.Holders...) {
		tokens = append(tokens, h.Token)
		s.TTL = max(s.TTL, h.TTL)
	}
	s.Token = strings.Join(tokens, ",")
	s.Owner = ownerOf(s.Token)
	return s
}

// ownerOf returns the owners of tokens, comma-separated as the tokens are.
func ownerOf(tokens string) string {
	var owners []string
	for t := range strings.SplitSeq(tokens, ",") {
		owners = append(owners, wire.Owner(t))
	}
	if slices.IndexFunc(owners, func(o string) bool { return o != "" }) < 0 {
		return ""
	}
	return strings.Join(owners, ",")
}

// read reads the keys of in on every node and returns each node's reply, in node order: every
// reply that came within the node timeout (or before ctx ended), so that a node failing at once
// does not cut the others short; the others as failed. start is when the read was sent: a
// node read its keys' ttls after it. read fails when no node answered.
func (c *Client) read(ctx context.Context, in wire.Inspect) (replies []quorum.Reply[wire.Reading], start time.Time, err error) {
	if err := c.enter(); err != nil {
		return nil, start, err
	}
	defer c.leave()
	rd := round[wire.Reading]{c: c, op: locktrace.NodeRead, cmd: run(wire.InspectScript, in), decode: wire.DecodeReading, wait: c.opts.nodeTimeout}
	start = c.opts.clock.Now()
	callCtx, cancel := context.WithTimeout(ctx, rd.wait)
	defer cancel() // ends only the calls still out at the deadline
	out := quorum.Start(callCtx, nil, len(c.nodes), rd.call).Gather(callCtx.Done(), nil)
	for _, rep := range out.Replies {
		if rep.Err == nil {
			replies = append(replies, rep)
		}
	}
	errs := nodeErrors(c, ctx, out, rd.wait)
	if len(errs) == len(c.nodes) {
		return nil, start, errors.Join(append([]error{errors.New("redlock: no node answered")}, errs...)...)
	}
	for _, err := range errs {
		replies = append(replies, quorum.Reply[wire.Reading]{Node: err.(*NodeError).Node, Err: err})
	}
	slices.SortFunc(replies, func(a, b quorum.Reply[wire.Reading]) int { return a.Node - b.Node })
	return replies, start, nil
}
