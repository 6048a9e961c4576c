package redlock

import (
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A spec is what one call acquires, the same for all its attempts: a sort of lock on its keys
// (ops), its quorum, and how its waiters are woken. It is the engine's only input beside the
// ttl, so that every primitive shares the fan-out, decision, roll-back, waiting, extension and
// release.
type spec struct {
	kind  locktrace.Kind
	key   string   // as given (LockAll's first key)
	keys  []string // every key as given, for LockAll; else nil
	need  int      // nodes that must say yes
	wake  []string // the names its releases announce, which wake its waiters
	multi string   // wire.MultiMark in LockAll's tokens, so that Resume tells them apart
	ops   ops
	// fence, when not nil, is the command of fencing's second round for the attempt of token
	// whose fencing token is term (see Client.fence).
	fence func(token string, term uint64) command
}

// ops builds the commands of one sort of lock on its keys, each the same for every node.
type ops interface {
	// acquire is an attempt's command.
	acquire(a attempt) command
	// extend gives the lock of token a new ttl.
	extend(token string, ttl time.Duration) command
	// release takes the lock of token away, announced on channel ("" for none). waiter is
	// the name of the waiter that acquired, if any.
	release(token, channel, waiter string) command
	// rollback takes a's lock away where a failed attempt may have set it. Where waiters
	// stand in line, the first one (if not a's own) is told on channel: its turn may have
	// come while a held the key.
	rollback(a attempt, channel string) command
	// abandon undoes what a waiter's attempts left on a node for others, when it gives up;
	// ok is false when they leave nothing.
	abandon(waiter, channel string) (cmd command, ok bool)
	// claim sets the lock of token, held by a quorum, for ttl on a node that lacks it (see
	// Lock.Orphan): over any other token for a lock key, which only an attempt that cannot win
	// holds; where holders share the key, as an acquisition that may find no room yet.
	claim(token string, ttl time.Duration) command
}

// An attempt is one acquisition attempt's input.
type attempt struct {
	token  string
	ttl    time.Duration
	waiter string        // the waiter's name; "" for an attempt that does not wait
	place  int64         // its place in a line: when it began waiting, in Unix microseconds
	lease  time.Duration // how long its place lasts at the front of a line unless an attempt renews it
}

// A command is one call, the same for every node of a round (see driver.Call).
type command = *driver.Call

// encoder is the arguments of a script (package wire).
type encoder interface{ Encode() (keys, args []string) }

func run(s *wire.Script, e encoder) command {
	keys, args := e.Encode()
	return &driver.Call{Script: s, Keys: keys, Args: args}
}

// secrets returns what a node's error must not show of cmd: its arguments that may be tokens
// or waiter names (the long ones).
func secrets(cmd command) []string {
	var s []string
	for _, a := range cmd.Args {
		if len(a) >= 16 {
			s = append(s, a)
		}
	}
	return s
}
