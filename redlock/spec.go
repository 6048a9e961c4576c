package redlock

import (
	"time"

	"github.com/quorumlock/redlock/internal/wire"
)

// A spec is what one call acquires, the same for all its attempts: a sort of lock on its keys
// (ops), its quorum, and how its waiters are woken. It is the engine's only input beside the
// ttl, so that every primitive shares the fan-out, decision, roll-back, waiting, extension and
// release.
type spec struct {
	kind   Kind
	key    string   // as given (LockAll's first key)
	keys   []string // every key as given, for LockAll; else nil
	need   int      // nodes that must say yes
	wake   []string // the names its releases announce, which wake its waiters
	suffix string   // ends every token of it, so that Resume tells LockAll's apart
	// fenced: a mutex WithFencing, whose acquisition has fencing's second round on mutex.
	fenced bool
	mutex  wire.MutexKeys
	ops    ops
}

// ops builds the commands of one sort of lock on its keys, each the same for every node.
type ops interface {
	// acquire is an attempt's command.
	acquire(a attempt) command
	// extend gives the lock of token a new ttl.
	extend(token string, ttl time.Duration) command
	// release takes the lock of token away: Unlock's, announced on channel, or a roll-back's
	// (channel ""). waiter is the name of the waiter that acquired, if any.
	release(token, channel, waiter string) command
	// abandon undoes what a waiter's attempts left on a node for others, when it gives up;
	// ok is false when they leave nothing.
	abandon(waiter, channel string) (cmd command, ok bool)
}

// An attempt is one acquisition attempt's input.
type attempt struct {
	token  string
	ttl    time.Duration
	waiter string        // the waiter's name; "" for an attempt that does not wait
	place  int64         // its place in a line: when it began waiting, in Unix microseconds
	lease  time.Duration // how long its place lasts unless an attempt renews it
}

// A command is one call, the same for every node of a round: a script with its KEYS and ARGV,
// or, when script is nil, SET keys[0] args[0] NX PX ttl.
type command struct {
	script     *wire.Script
	keys, args []string
	ttl        time.Duration
}

// encoder is the arguments of a script (package wire).
type encoder interface{ Encode() (keys, args []string) }

func run(s *wire.Script, e encoder) command {
	keys, args := e.Encode()
	return command{script: s, keys: keys, args: args}
}

// secrets returns what a node's error must not show of cmd: its arguments that may be tokens
// or waiter names (the long ones).
func (cmd command) secrets() []string {
	var s []string
	for _, a := range cmd.args {
		if len(a) >= 16 {
			s = append(s, a)
		}
	}
	return s
}
