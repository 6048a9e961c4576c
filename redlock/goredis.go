package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A goredisNode is a Node over a go-redis client, as New makes them.
//
// go-redis bounds a call by its client's read and write timeouts (3 s by default), not by the
// context, and retries a failed call (READONLY, a timeout) with back-off. So every command is
// sent once, never retried by go-redis: the Client retries by itself, and a node's own error
// (READONLY, OOM, NOPERM) comes back at once. The Client stops waiting for a call at its
// deadline (see round.ask); a call to a stopped node then ends in go-redis by its timeouts.
// Subscriptions go through a view of a *redis.Client (WithTimeout, sharing its connections)
// whose timeouts are the node timeout, so that making one never waits on a stuck node longer.
type goredisNode struct {
	addr string
	send func(ctx context.Context, cmd redis.Cmder) error
	sub  redis.UniversalClient // where Listen subscribes
}

var _ Commander = (*goredisNode)(nil)

func newGoredisNode(u redis.UniversalClient, timeout time.Duration) *goredisNode {
	switch u := u.(type) {
	case *redis.Client:
		b := &batcher{node: u}
		return &goredisNode{addr: u.Options().Addr, send: new(refusals).send(b.process, timeout), sub: u.WithTimeout(timeout)}
	case *redis.ClusterClient:
		return &goredisNode{addr: strings.Join(u.Options().Addrs, ","), send: u.Process, sub: u}
	}
	return &goredisNode{send: u.Process, sub: u}
}

func (n *goredisNode) String() string { return n.addr }

// once is a command that go-redis sends once: it never retries a command whose NoRetry says so.
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

type setOnce struct{ *redis.BoolCmd }

func (setOnce) NoRetry() bool { return true }

func (n *goredisNode) Eval(ctx context.Context, script Script, keys, args []string) (any, error) {
	v, err := n.eval(ctx, boxArgs("evalsha", script.SHA1(), keys, args))
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = n.eval(ctx, boxArgs("eval", script.Source(), keys, args))
	}
	return v, err
}

// send sends cmd with the arguments it boxed once for every go-redis node (see boxed).
func (n *goredisNode) do(ctx context.Context, cmd command) (any, error) {
	b := cmd.box.of(cmd)
	if cmd.script == nil {
		return n.setNX(ctx, b.set)
	}
	v, err := n.eval(ctx, b.evalsha)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		eval := slices.Clone(b.evalsha)
		eval[0], eval[1] = "eval", cmd.script.Source()
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
	return flat(cmd.Val()), nil
}

func (n *goredisNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.setNX(ctx, []any{"set", key, value, "px", ttl.Milliseconds(), "nx"})
}

// setNX sends SET with a, its arguments from the verb on.
func (n *goredisNode) setNX(ctx context.Context, a []any) (bool, error) {
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
