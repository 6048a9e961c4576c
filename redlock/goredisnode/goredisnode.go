// Package goredisnode runs the redlock library on go-redis v9 clients: New wraps a go-redis
// client as a driver.Node, as redlock.New does with each of its clients, so that go-redis clients
// mix with nodes of other clients (redlockrueidis, redlockvalkey) in redlock.NewNodes; Votes
// makes the votes of redlock.NewCluster.
//
// go-redis bounds a call by its client's read and write timeouts (3 s by default), not by the
// context, and retries a failed call (READONLY, a timeout) with back-off. So every command is
// sent once, never retried by go-redis: a redlock Client retries by itself, and a node's own
// error (READONLY, OOM, NOPERM) comes back at once. A Client stops waiting for a call at its
// deadline; a call to a stopped node then ends in go-redis by its timeouts.
package goredisnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/internal/nodecall"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A goredisNode is a node over a go-redis client, as New makes them.
//
// Subscriptions go through a view of a *redis.Client (WithTimeout, sharing its connections)
// whose timeouts are the node timeout (the default's for a node used on its own), so that
// making one never waits on a stuck node longer.
type goredisNode struct {
	client redis.UniversalClient
	addr   string
	// send sends a command: process, bounded by the context's deadline for a node used on its
	// own; a Client's copy (ForClient) sends by process (through refusals for a *redis.Client),
	// since the Client stops waiting for a call at its deadline itself.
	send    func(ctx context.Context, cmd redis.Cmder) error
	process func(ctx context.Context, cmd redis.Cmder) error // a *redis.Client's through its batcher
	sub     redis.UniversalClient                            // where Listen subscribes
}

var (
	_ driver.Sender    = (*goredisNode)(nil)
	_ driver.Tuned     = (*goredisNode)(nil)
	_ driver.Clustered = (*goredisNode)(nil)
)

// defaultTimeout is the node timeout of a node used on its own: redlock's default.
const defaultTimeout = 100 * time.Millisecond

// New returns a node over c, a go-redis client. A *redis.Client is one master, and the calls
// that many goroutines make to it at once go out together in one pipeline; a
// *redis.ClusterClient is a whole Redis Cluster, one vote, whose every key of a lock lives in
// the lock key's hash slot. Every command is sent once, never retried by go-redis, and each call
// returns by its context's deadline (a Client stops waiting for it at the node timeout), though
// go-redis ends the call itself only by its client's own timeouts. The node has a Command method,
// which sends any command once (see redlock/doctor). It returns nil for a nil c, which
// redlock.NewNodes refuses.
func New(c redis.UniversalClient) driver.Node {
	if c == nil || reflect.ValueOf(c).Kind() == reflect.Pointer && reflect.ValueOf(c).IsNil() {
		return nil
	}
	n := &goredisNode{client: c, process: c.Process, sub: c}
	switch u := c.(type) {
	case *redis.Client:
		n.addr, n.process = u.Options().Addr, (&batcher{node: u}).process
		n.sub = u.WithTimeout(defaultTimeout)
	case *redis.ClusterClient:
		n.addr = strings.Join(u.Options().Addrs, ",")
	}
	n.send = n.byDeadline
	return n
}

// ForClient returns a copy of n for a Client whose node timeout is timeout: it sends by process
// (a *redis.Client's failing at once while its node refuses connections, see refusals), and a
// *redis.Client's subscriptions go through a view of it (sharing its connections) whose timeouts
// are the node timeout. The copy shares n's batcher.
func (n *goredisNode) ForClient(timeout time.Duration) driver.Node {
	c := *n
	c.send = n.process
	if u, ok := n.client.(*redis.Client); ok {
		c.send = new(refusals).send(n.process, timeout)
		c.sub = u.WithTimeout(timeout)
	}
	return &c
}

// Clustered reports whether the node spreads over many servers: anything but a *redis.Client.
func (n *goredisNode) Clustered() bool {
	_, one := n.client.(*redis.Client)
	return !one
}

// Client returns the go-redis client the node sends through.
func (n *goredisNode) Client() redis.UniversalClient { return n.client }

// byDeadline sends cmd by process and returns by ctx's end whatever go-redis does: the call goes
// on in a goroutine of its own until go-redis ends it by its client's timeouts, and cmd is not
// to be read then.
func (n *goredisNode) byDeadline(ctx context.Context, cmd redis.Cmder) error {
	_, err := nodecall.ByDeadline(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, n.process(ctx, cmd) })
	return err
}

func (n *goredisNode) String() string { return n.addr }

// oneSlot refuses, on a Redis Cluster, a script whose keys are in more than one hash slot: go-redis
// would send it to the first key's master, which refuses it (CROSSSLOT).
func (n *goredisNode) oneSlot(keys []string) error {
	if _, ok := n.client.(*redis.ClusterClient); !ok {
		return nil
	}
	if err := keyslot.OneSlot(keys); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// once is a command that go-redis sends once: it never retries a command whose NoRetry says so.
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

type setOnce struct{ *redis.BoolCmd }

func (setOnce) NoRetry() bool { return true }

func (n *goredisNode) Eval(ctx context.Context, script driver.Script, keys, args []string) (any, error) {
	if err := n.oneSlot(keys); err != nil {
		return nil, err
	}
	v, err := n.eval(ctx, boxArgs("evalsha", script.SHA1(), keys, args))
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = n.eval(ctx, boxArgs("eval", script.Source(), keys, args))
	}
	return v, err
}

// Send sends call with its arguments boxed once for every go-redis node of the round (see
// boxed).
func (n *goredisNode) Send(ctx context.Context, call *driver.Call) (any, error) {
	if err := n.oneSlot(call.Keys); err != nil {
		return nil, err
	}
	b := boxedOf(call)
	if call.Script == nil {
		return n.setNX(ctx, b)
	}
	v, err := n.eval(ctx, b)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		eval := slices.Clone(b)
		eval[0], eval[1] = "eval", call.Script.Source()
		v, err = n.eval(ctx, eval)
	}
	return v, err
}

// eval sends EVALSHA or EVAL with a, its arguments from the verb on.
func (n *goredisNode) eval(ctx context.Context, a []any) (any, error) {
	cmd := once{redis.NewCmd(ctx, a...)}
	if a[2] != 0 {
		cmd.SetFirstKeyPos(3) // for a cluster, as go-redis's own EVALSHA
	}
	switch err := n.send(ctx, cmd); {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return cmd.Val(), nil
}

// Command sends args once to the node's server; a client of a whole Redis Cluster has none.
func (n *goredisNode) Command(ctx context.Context, args ...string) (any, error) {
	return n.command(ctx, "", args)
}

// command sends args once; on a Redis Cluster, to the master that serves the slot of
// slotKey (a vote's tag), and with slotKey "" not at all (errors.ErrUnsupported), nor on a
// ring of shards.
func (n *goredisNode) command(ctx context.Context, slotKey string, args []string) (any, error) {
	send := n.send
	switch u := n.sub.(type) {
	case *redis.ClusterClient:
		if slotKey == "" {
			return nil, fmt.Errorf("redlock: a command to one server of a cluster client: %w", errors.ErrUnsupported)
		}
		m, err := u.MasterForKey(ctx, slotKey)
		if err != nil {
			return nil, err
		}
		send = m.Process
	case *redis.Ring:
		return nil, fmt.Errorf("redlock: a command to one server of a ring client: %w", errors.ErrUnsupported)
	}
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	cmd := once{redis.NewCmd(ctx, a...)}
	switch err := send(ctx, cmd); {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return nodecall.Flat(cmd.Val()), nil
}

func (n *goredisNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	v, err := n.setNX(ctx, []any{"set", key, value, "px", ttl.Milliseconds(), "nx"})
	set, _ := v.(bool)
	return set, err
}

// setNX sends SET with a, its arguments from the verb on, and returns whether it set the key.
func (n *goredisNode) setNX(ctx context.Context, a []any) (any, error) {
	cmd := setOnce{redis.NewBoolCmd(ctx, a...)}
	if err := n.send(ctx, cmd); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	return cmd.Val(), nil
}

// listenPing is how long a subscription may hear nothing before it is asked for a PONG.
const listenPing = 5 * time.Second

func (n *goredisNode) Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	ps := n.sub.Subscribe(ctx, channels...)
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	defer ps.Close()
	pinged := false
	for {
		// A subscription that has heard nothing for a while is asked for a PONG: a connection
		// that went silent (a lost reply) is found and made anew.
		msg, err := ps.ReceiveTimeout(ctx, listenPing)
		var ne net.Error
		switch {
		case err == nil:
			pinged = false
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &ne) && ne.Timeout() && !pinged:
			pinged = true
			if err := ps.Ping(ctx); err != nil {
				return err
			}
			continue
		default:
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Count == len(channels) && slices.Contains(channels, m.Channel) {
				ready()
			}
		case *redis.Message:
			deliver(m.Channel, m.Payload)
		}
	}
}
