package redlock

import (
	"context"
	"time"
)

// A Node is one independent Redis master as a Client uses it: the few operations a lock needs,
// each bounded by its context. New wraps go-redis clients as Nodes; the redlockrueidis and
// redlockvalkey modules wrap rueidis and valkey-go clients, and NewNodes takes any of them.
//
// A Node is called from many goroutines at once. Each call should return by its context's
// deadline: the Client stops waiting for a call then, counts the node as failed and treats
// what the call did as unknown, but it cannot stop the call itself. A call that did reach the
// node and failed there returns the node's error reply as an error whose text is the node's
// ("READONLY You can't write against a read only replica", "NOPERM ...").
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

// A Commander is a Node that also sends any command the server knows, for what no script may
// run: Client.Check reads a node's INFO, CONFIG GET, COMMAND INFO, ACL DRYRUN and TIME through
// it. The nodes of New, and those of the redlockrueidis and redlockvalkey modules, are
// Commanders; Check checks a Node that is not one as far as Eval allows, and says what it
// could not check.
type Commander interface {
	Node

	// Command sends args, a command and its arguments, once, and returns its reply as Eval
	// does (an int64, a string, a []any of such values, or nil), a map (RESP3) as a []any of
	// its keys and values in turn, and a server's error reply as an error with the server's
	// text. A node that cannot send a command to one server (a client of a whole Redis
	// Cluster) returns an error that wraps errors.ErrUnsupported.
	Command(ctx context.Context, args ...string) (any, error)
}
