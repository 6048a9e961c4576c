// Package redlockrueidis runs the redlock library on rueidis clients: Node wraps a
// rueidis.Client (standalone, cluster or sentinel) as a driver.Node, and redlock.NewNodes makes
// a Client of such nodes, alone or mixed with nodes of other clients.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
//	...
//	c, err := redlock.NewNodes([]driver.Node{redlockrueidis.Node(client), ...})
package redlockrueidis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/internal/nodecall"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A node is one redlock node over a rueidis client.
//
// Every command is sent once. rueidis retries only the commands it knows to be read-only (or
// that were marked retryable); EVALSHA, EVAL and SET are writes, so it never resends them,
// whatever ClientOption.DisableRetry says: a resent acquisition that had reached the node would
// be refused as taken by itself. A cluster's MOVED and ASK are followed: the node that
// answered so did not run the command.
//
// Each call ends by its context's deadline: rueidis gives up waiting for the reply then, and
// leaves the command queued in order on its connection (see inOrder). Concurrent EVALSHA and SET
// calls with a deadline go out together in one DoMulti while another batch is in flight (see
// batcher), except on a cluster client, and a call waiting for its batch ends by its deadline
// too. A call that must first
// make a new connection (the old one failed) to a node that does not answer goes on up to the
// client's Dialer.Timeout (5 s by default) whatever its deadline, but alone: the node's method
// returns at the deadline all the same (see nodecall.ByDeadline). Listen's subscription has no
// deadline: it ends when its context does, or when its connection fails (rueidis pings a
// connection every Dialer.KeepAlive, 1 s by default, and drops it when ConnWriteTimeout, 10 s,
// passes without an answer). Two steps of a subscription do not end with its context in
// rueidis: making its connection (bounded by Dialer.Timeout, 5 s by default, when the node does
// not answer) and closing it (up to 1 s when the node has gone silent). Listen returns when
// its context ends all the same, and leaves them to finish in a goroutine of their own, as a
// redlock Client leaves a node call that its client does not end by its deadline.
type node struct {
	client  rueidis.Client
	batch   *batcher // for EVALSHA and SET; nil on a cluster client (see Node)
	addr    string
	cluster bool // a script's keys must then share a hash slot
}

// Node returns client as a node of a redlock Client, for redlock.NewNodes. A cluster client is
// one node (one vote): every key of a lock on it lives in the lock key's hash slot. The node
// does not own client: closing the redlock Client leaves it open, and it must stay open as
// long as the redlock Client is used.
//
// Give each node of a Client its own rueidis client to its own Redis master: NewNodes cannot
// tell two nodes over one client, or one server, apart.
func Node(client rueidis.Client) driver.Node {
	n := &node{
		client:  client,
		addr:    strings.Join(slices.Sorted(maps.Keys(client.Nodes())), ","),
		cluster: client.Mode() == rueidis.ClientModeCluster,
	}
	// A cluster client's DoMulti waits for every shard of a batch: one stopped master would hold
	// up the calls to all the others.
	if !n.cluster {
		n.batch = &batcher{client: client}
	}
	return n
}

var (
	_ driver.Tuned     = (*node)(nil)
	_ driver.Clustered = (*node)(nil)
)

// Clustered reports whether client is a cluster client.
func (n *node) Clustered() bool { return n.cluster }

// ForClient returns n as a Client uses it: a Client stops waiting for a call at its deadline by
// itself, so a call of the copy runs on the Client's goroutine rather than on one of its own
// (nodecall.ByDeadline), and returns at the deadline as rueidis gives up waiting (see inOrder),
// or later only while it makes a new connection.
func (n *node) ForClient(time.Duration) driver.Node { return forClient{n} }

// forClient is a node made for a Client (ForClient).
type forClient struct{ *node }

func (n forClient) Eval(ctx context.Context, script driver.Script, keys, args []string) (any, error) {
	return n.eval(ctx, script, keys, args)
}

func (n forClient) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.setNX(ctx, key, value, ttl)
}

// String returns the node's address (a cluster's known addresses, comma-separated), which a
// redlock Client names it by in errors.
func (n *node) String() string { return n.addr }

// Eval runs script with EVALSHA, and with EVAL when the node answers NOSCRIPT.
func (n *node) Eval(ctx context.Context, script driver.Script, keys, args []string) (any, error) {
	return nodecall.ByDeadline(ctx, func(ctx context.Context) (any, error) { return n.eval(ctx, script, keys, args) })
}

func (n *node) eval(ctx context.Context, script driver.Script, keys, args []string) (any, error) {
	if err := n.sameSlot(keys); err != nil {
		return nil, err
	}
	c := n.client
	res, err := n.batch.do(ctx, c, c.B().Evalsha().Sha1(script.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if err != nil {
		return nil, err
	}
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && err.IsNoScript() {
		res = c.Do(inOrder(ctx), c.B().Eval().Script(script.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	v, err := res.ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	return v, err
}

// sameSlot fails, on a cluster, for keys in more than one hash slot, which no node of a
// cluster runs a script on (rueidis would panic building the command).
func (n *node) sameSlot(keys []string) error {
	if !n.cluster {
		return nil
	}
	if err := keyslot.OneSlot(keys); err != nil {
		return fmt.Errorf("redlockrueidis: %w", err)
	}
	return nil
}

// SetNX sets key with SET NX PX.
func (n *node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return nodecall.ByDeadline(ctx, func(ctx context.Context) (bool, error) { return n.setNX(ctx, key, value, ttl) })
}

func (n *node) setNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	c := n.client
	res, err := n.batch.do(ctx, c, c.B().Set().Key(key).Value(value).Nx().PxMilliseconds(ttl.Milliseconds()).Build())
	if err == nil {
		err = res.Error()
	}
	switch {
	case rueidis.IsRedisNil(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Command sends args, a command and its arguments, once, for the doctor (redlock/doctor). On a
// cluster client it fails with errors.ErrUnsupported: rueidis sends a command without keys to a
// node of its choosing, and Check wants one server's answers.
func (n *node) Command(ctx context.Context, args ...string) (any, error) {
	switch {
	case n.cluster:
		return nil, fmt.Errorf("redlockrueidis: a command to one server of a cluster client: %w", errors.ErrUnsupported)
	case len(args) == 0 || args[0] == "" || strings.HasSuffix(strings.ToUpper(args[0]), "SUBSCRIBE"):
		// rueidis would panic building such a command.
		return nil, fmt.Errorf("redlockrueidis: %q is no command to send (none, or a subscription)", args)
	}
	return nodecall.ByDeadline(ctx, func(ctx context.Context) (any, error) {
		c := n.client
		ctx = inOrder(ctx)
		v, err := c.Do(ctx, c.B().Arbitrary(args...).Build()).ToAny()
		switch {
		case rueidis.IsRedisNil(err):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return nodecall.Flat(v), nil
	})
}

// inOrder returns ctx without its deadline, for a call that must end with ctx yet leave its
// connection open: given a deadline, rueidis reads the reply of a call that is alone on its
// connection with that deadline on the socket, and closes the connection when it passes. The
// command may then still reach the node after a later one sent on a new connection: an
// acquisition after its own roll-back, a lock that nobody holds and everyone is refused until
// its ttl. Without a deadline rueidis queues the call on the connection and gives up waiting
// when the context ends (the returned one ends with ctx, and its Err is ctx's), leaving the
// command in place, in order.
func inOrder(ctx context.Context) context.Context { return noDeadline{ctx} }

// noDeadline is a context without its deadline (see inOrder).
type noDeadline struct{ context.Context }

func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// errUnsubscribed is Listen's error when the subscription ended without a failure of its own.
var errUnsubscribed = errors.New("redlockrueidis: the subscription ended")

// Listen subscribes in a goroutine, which it leaves when ctx ends (see node): ready and
// deliver are never called after Listen returned.
func (n *node) Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	var mu sync.Mutex
	over := false
	guard := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			f()
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- n.subscribe(ctx, channels, func() { guard(ready) }, func(ch, payload string) {
			guard(func() { deliver(ch, payload) })
		})
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		mu.Lock()
		over = true
		mu.Unlock()
		return ctx.Err()
	}
}

// subscribe subscribes on a connection of its own (a dedicated client), so that the
// subscriptions of several redlock Clients over one rueidis client never end one another's,
// and closes that connection when it returns: returned to the pool, it would be unsubscribed
// first with no deadline.
func (n *node) subscribe(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	dc, release := n.client.Dedicate()
	defer release()
	defer dc.Close()

	// The hook runs in the connection's reading goroutine, one confirmation after another.
	waiting := make(map[string]bool, len(channels))
	for _, ch := range channels {
		waiting[ch] = true
	}
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" && waiting[s.Channel] {
			delete(waiting, s.Channel)
			if len(waiting) == 0 {
				ready()
			}
		}
	})
	err := dc.Receive(hooked, dc.B().Subscribe().Channel(channels...).Build(), func(m rueidis.PubSubMessage) {
		deliver(m.Channel, m.Message)
	})
	if err == nil {
		err = errUnsubscribed
	}
	return err
}
