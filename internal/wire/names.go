package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// Reserved starts the name of every key and channel of the library's own beside the lock keys
// (after the prefix): no key a user names may start with it, so no lock key is ever another's
// companion.
const Reserved = "~redlock:"

// Names names the keys and channels of a Client whose keys have a prefix. A lock key is the
// prefix and the key as given, a plain string: what other Redlock clients store. Everything
// else is a companion of a lock key, named under the prefix as Companion says, or a channel
// named under the prefix too.
type Names struct {
	prefix string
	tagged bool // the prefix has a hash tag: every key under it is in the tag's slot
}

// NewNames returns the names under prefix. A prefix is either free of "{" or holds a whole,
// non-empty hash tag ("{tenant}:"), which then puts every key of the Client in one slot; a
// prefix whose tag is empty or not closed would make the slot of a key depend on the key in
// ways that its companions could not follow, and is refused.
func NewNames(prefix string) (Names, error) {
	if len(prefix) > MaxKey {
		return Names{}, fmt.Errorf("key prefix of %d bytes is too long: the limit is %d bytes", len(prefix), MaxKey)
	}
	i := strings.IndexByte(prefix, '{')
	if i < 0 {
		return Names{prefix: prefix}, nil
	}
	if j := strings.IndexByte(prefix[i+1:], '}'); j <= 0 {
		return Names{}, fmt.Errorf("key prefix %q opens a hash tag it does not close with a non-empty tag "+
			"(a prefix is either free of '{' or holds a whole tag such as \"{tenant}:\")", prefix)
	}
	return Names{prefix: prefix, tagged: true}, nil
}

// Prefix returns the prefix.
func (n Names) Prefix() string { return n.prefix }

// Tagged reports whether the prefix holds a hash tag.
func (n Names) Tagged() bool { return n.tagged }

// MaxKey is the longest key, in bytes, that a lock, a primitive or an election may have, and the
// longest prefix: a script names a key several times (its companions carry it whole), and each
// node must read and answer it well within the node timeout. On loopback a name of 1 KiB costs
// an election's calls a millisecond or two, one of 1 MiB more than the default node timeout.
const MaxKey = 1024

// MaxValue is the longest value, in bytes, an election's leader may proclaim: every Leader and
// Observe reads it from every node within the node timeout. On loopback a value of 64 KiB costs
// Leader about a millisecond, one of 10 MiB more than the default node timeout.
const MaxValue = 64 << 10

// CheckKey rejects a key no lock may have: the empty key, a key longer than MaxKey, and a key
// starting with Reserved.
func CheckKey(key string) error {
	if err := checkSize("key", key, MaxKey); err != nil {
		return err
	}
	if strings.HasPrefix(key, Reserved) {
		return fmt.Errorf("key %q starts with %q, which names the library's own keys", key, Reserved)
	}
	return nil
}

// CheckValue rejects a value no leader may proclaim: the empty value, and one longer than
// MaxValue.
func CheckValue(value string) error { return checkSize("value", value, MaxValue) }

// checkSize rejects s, a what ("key"), when it is empty or longer than limit bytes.
func checkSize(what, s string, limit int) error {
	switch {
	case s == "":
		return errors.New("empty " + what)
	case len(s) > limit:
		return fmt.Errorf("%s of %d bytes is too long: the limit is %d bytes", what, len(s), limit)
	}
	return nil
}

// Key returns the lock key of key: the prefix and key.
func (n Names) Key(key string) string { return n.prefix + key }

// Companion returns the name of the key of the given kind ("queue", "fence", ...) that belongs
// to the lock of key, in the lock key's Redis Cluster hash slot and under the prefix: the
// prefix, Reserved, the kind, a colon, and then
//
//   - with a prefix that holds a hash tag, the key;
//   - else a hash tag of the lock key's slot and the key: the lock key's own tag when it has
//     one ("app:~redlock:queue:{user:7}{user:7}:profile"), the whole lock key when it has no
//     "}" ("app:~redlock:queue:{app:orders}orders"), and otherwise a short brace-free tag of
//     its slot.
//
// The key ends every name after the first "}" that follows the kind, so no two keys share a
// companion.
func (n Names) Companion(kind, key string) string {
	head := n.prefix + Reserved + kind + ":"
	if n.tagged {
		return head + key
	}
	stored := n.prefix + key
	tag := keyslot.Hashed(stored)
	if tag == stored && strings.Contains(stored, "}") {
		tag = keyslot.Tag(keyslot.Of(stored))
	}
	return head + "{" + tag + "}" + key
}

// Channel returns the channel on which releases are announced to every Client.
func (n Names) Channel() string { return n.prefix + Reserved + "released" }

// ClientChannel returns the channel on which releases are announced to the Client with id:
// the channel, a colon and the id (queue.lua writes it so).
func (n Names) ClientChannel(id string) string { return n.Channel() + ":" + id }

// Probe returns the key on which the doctor tries a write: a companion of the queue's kind to
// a name that starts with Reserved, which no lock may have (CheckKey), so that the probe touches
// no lock's keys and an ACL that lets the library use its queues lets it write there.
func (n Names) Probe() string { return n.Companion("queue", Reserved+"doctor") }

// Channels returns every channel a Client with id touches: Channel, and the ClientChannel of id
// (a Client announces on other Clients' channels too, named as its own).
func (n Names) Channels(id string) []string { return []string{n.Channel(), n.ClientChannel(id)} }

// Every returns every key the library keeps for the name key, whatever it names (a lock, a
// semaphore, a read-write lock, an election): the string fields of Mutex, Semaphore, RWMutex
// and Election, in that order. A field added to one of those is in it with no more ado; a new
// kind of keys goes in the list below (TestEveryNamesEveryKey fails until it does).
func (n Names) Every(key string) []string {
	var names []string
	for _, keys := range []any{n.Mutex(key), n.Semaphore(key), n.RWMutex(key), n.Election(key)} {
		names = appendFields(names, reflect.ValueOf(keys))
	}
	return names
}

// appendFields appends the string fields of struct v to names, those of its struct fields
// (an embedded MutexKeys) in their place.
func appendFields(names []string, v reflect.Value) []string {
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			names = append(names, f.String())
		case reflect.Struct:
			names = appendFields(names, f)
		}
	}
	return names
}

// MutexKeys are the keys of a single-key lock: the lock key, its line of waiters (a sorted set
// and the prefix of its waiters' lease keys, see queue.lua), the mark that a call without a
// place in the line (a LockAll's) waits for a release of the key, and, with fencing, its
// counter ("" without).
type MutexKeys struct {
	Lock, Queue, Leases, Watch, Fence string
}

// Mutex returns the keys of the lock of key, its fencing counter included.
func (n Names) Mutex(key string) MutexKeys {
	k := n.Unfenced(key)
	k.Fence = n.Companion("fence", key)
	return k
}

// Unfenced returns the keys of a single-key lock of key without its fencing counter (Fence
// ""): a lock without fencing never touches it, and need not pay for its name.
func (n Names) Unfenced(key string) MutexKeys {
	return MutexKeys{Lock: n.Key(key), Queue: n.Companion("queue", key), Leases: n.Companion("leases", key),
		Watch: n.Companion("watch", key)}
}

// ElectionKeys are the keys of an election: a single-key lock of its own (its key, line and
// fencing counter, whose tokens are the terms) and the leader's value beside it.
type ElectionKeys struct {
	MutexKeys
	Value string
}

// Election returns the keys of the election named name: companions of name, so that they
// never collide with a lock of the same name.
func (n Names) Election(name string) ElectionKeys {
	return ElectionKeys{
		MutexKeys: MutexKeys{
			Lock:   n.Companion("election", name),
			Queue:  n.Companion("election.queue", name),
			Leases: n.Companion("election.leases", name),
			Watch:  n.Companion("election.watch", name),
			Fence:  n.Companion("election.fence", name),
		},
		Value: n.Companion("election.value", name),
	}
}

// SemaphoreKeys are the keys of a semaphore: its holders, and the mark that a call waits for
// a release (see Watching).
type SemaphoreKeys struct {
	Holders, Watch string
}

// Semaphore returns the keys of the semaphore named key.
func (n Names) Semaphore(key string) SemaphoreKeys {
	return SemaphoreKeys{Holders: n.Companion("semaphore", key), Watch: n.Companion("semaphore.watch", key)}
}

// RWMutexKeys are the keys of a read-write lock: the writer's key (a string holding its token),
// the readers (holders), the mark of a waiting writer, and the mark that a call waits for a
// release (see Watching).
type RWMutexKeys struct {
	Writer, Readers, Mark, Watch string
}

// RWMutex returns the keys of the read-write lock named key.
func (n Names) RWMutex(key string) RWMutexKeys {
	return RWMutexKeys{
		Writer:  n.Companion("rwlock", key),
		Readers: n.Companion("readers", key),
		Mark:    n.Companion("writing", key),
		Watch:   n.Companion("rwlock.watch", key),
	}
}
