// Package driver is the contract between a redlock Client and the Redis clients it runs on: a
// Node is one independent Redis master, as the few operations a lock needs, each bounded by its
// context. The go-redis node (package goredisnode) and the modules redlockrueidis and
// redlockvalkey implement it; redlock.NewNodes takes any of them, mixed. It imports only the
// standard library, so that an implementation depends on nothing else of the library.
package driver

import (
	"context"
	"sync"
	"time"
)

// A Node is one independent Redis master as a Client uses it: the few operations a lock needs,
// each bounded by its context.
//
// A Node is called from many goroutines at once. Each call should return by its context's
// deadline: the Client stops waiting for a call then, counts the node as failed and treats
// what the call did as unknown, but it cannot stop the call itself. A call that did reach the
// node and failed there returns the node's error reply as an error whose text is the node's
// ("READONLY You can't write against a read only replica", "NOPERM ..."). A Node that has a
// String method is named by it in errors.
type Node interface {
	// Eval runs script on the node with keys and args: EVALSHA with the script's SHA1, and EVAL
	// with its source when the node does not know it (NOSCRIPT). It returns the script's reply
	// as an int64, a string, a []any of such values, or nil for a nil reply.
	Eval(ctx context.Context, script Script, keys, args []string) (any, error)

	// SetNX sets key to value, expiring after ttl (a whole number of milliseconds), unless key
	// exists: SET key value NX PX ms. It reports whether it set the key.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)

	// Listen subscribes to channels and calls deliver with the channel and payload of every
	// message, one at a time, until ctx ends or the subscription fails, and returns then. It
	// calls ready once the node has confirmed the subscription to every channel. The Client
	// calls Listen again after a failure.
	Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error
}

// A Script is a Lua script that a Client runs on its nodes.
type Script interface {
	Source() string // the script's text
	SHA1() string   // the SHA1 of the text in hex, as EVALSHA takes it
}

// A Call is one command that a Client sends alike to every node of a round: Script with Keys
// and Args, or, when Script is nil, SET Keys[0] Args[0] NX PX TTL. The nodes of the round share
// it and must not change it.
type Call struct {
	Script     Script
	Keys, Args []string
	TTL        time.Duration

	once   sync.Once
	values []any
	room   [callRoom]any
}

// callRoom is how many values a Call holds in place: release.lua's EVALSHA, the commonest
// call, has 11.
const callRoom = 12

// Values returns the call as the list of values that encode makes of it, made once for every
// node that asks: a node whose client takes a command as a list of values (go-redis boxes each
// argument) makes it once a round rather than once a node. encode is given room for 12 values
// in the Call itself, so that a list that fits costs no allocation. The first encode given is
// the one that runs: nodes of one kind share it.
func (c *Call) Values(encode func(c *Call, room []any) []any) []any {
	c.once.Do(func() { c.values = encode(c, c.room[:0]) })
	return c.values
}

// A Sender is a Node that takes a round's Call whole (optional): the Client sends a Call to a
// Sender by Send, and to any other Node by Eval or SetNX.
type Sender interface {
	Node
	// Send sends call as Eval, or SetNX with its reply as a bool, would.
	Send(ctx context.Context, call *Call) (any, error)
}

// A Tuned is a Node that a Client tunes to itself when it takes it (optional): NewNodes keeps
// the Node that ForClient returns in its place. The Client stops waiting for a call at its
// deadline by itself, and a Node made for a Client may leave that to it.
type Tuned interface {
	Node
	// ForClient returns the node as a Client whose node timeout is nodeTimeout uses it.
	ForClient(nodeTimeout time.Duration) Node
}

// A Clustered is a Node that may spread over many servers, as a Redis Cluster does (optional).
// A message that a script publishes on one server of a cluster is counted only by the
// subscriptions made to that server, so a Client cannot learn from that count whether its
// waiters hear the node: a Client with a node whose Clustered says true gives each of its
// waiters a lease on every node instead, which its attempts renew. A Node that is one server
// need not implement it.
type Clustered interface {
	Node
	// Clustered reports whether the node spreads over many servers.
	Clustered() bool
}
