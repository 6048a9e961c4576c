// Package wire is the contract between the Go side of the library and its Lua scripts: the
// scripts themselves, the typed arguments of each, encoded to KEYS and ARGV in one place, the
// decoding of their replies, the names of every key and channel on the nodes, and the formats
// of waiter names and release announcements. It knows nothing of the engine that runs them.
package wire

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Script is one Lua script: its text and the SHA1 that EVALSHA takes.
type Script struct {
	name, src, sha string
}

func newScript(name string, parts ...string) *Script {
	src := strings.Join(parts, "\n")
	sum := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// Name returns the script's file name without ".lua", for errors and logs.
func (s *Script) Name() string { return s.name }

// Source returns the script's text.
func (s *Script) Source() string { return s.src }

// SHA1 returns the SHA1 of the script's text in hex.
func (s *Script) SHA1() string { return s.sha }

var (
	//go:embed scripts/queue.lua
	queueLib string
	//go:embed scripts/holders.lua
	holdersLib string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/leave.lua
	leaveSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/fence.lua
	fenceSrc string
	//go:embed scripts/semaphore.lua
	semaphoreSrc string
	//go:embed scripts/holders_extend.lua
	holdersExtendSrc string
	//go:embed scripts/holders_release.lua
	holdersReleaseSrc string
	//go:embed scripts/read.lua
	readSrc string
	//go:embed scripts/write.lua
	writeSrc string
	//go:embed scripts/write_release.lua
	writeReleaseSrc string
	//go:embed scripts/write_abandon.lua
	writeAbandonSrc string
	//go:embed scripts/multi_acquire.lua
	multiAcquireSrc string
	//go:embed scripts/multi_extend.lua
	multiExtendSrc string
	//go:embed scripts/multi_release.lua
	multiReleaseSrc string
)

// The scripts. Those that read a lock's line of waiters start with queue.lua's functions, the
// semaphore's and the readers' with holders.lua's.
var (
	AcquireScript        = newScript("acquire", queueLib, acquireSrc)
	ReleaseScript        = newScript("release", queueLib, releaseSrc)
	LeaveScript          = newScript("leave", queueLib, leaveSrc)
	ExtendScript         = newScript("extend", extendSrc)
	FenceScript          = newScript("fence", fenceSrc)
	SemaphoreScript      = newScript("semaphore", holdersLib, semaphoreSrc)
	HoldersExtendScript  = newScript("holders_extend", holdersLib, holdersExtendSrc)
	HoldersReleaseScript = newScript("holders_release", holdersLib, holdersReleaseSrc)
	ReadScript           = newScript("read", holdersLib, readSrc)
	WriteScript          = newScript("write", holdersLib, writeSrc)
	WriteReleaseScript   = newScript("write_release", writeReleaseSrc)
	WriteAbandonScript   = newScript("write_abandon", writeAbandonSrc)
	MultiAcquireScript   = newScript("multi_acquire", multiAcquireSrc)
	MultiExtendScript    = newScript("multi_extend", multiExtendSrc)
	MultiReleaseScript   = newScript("multi_release", queueLib, multiReleaseSrc)
)

// Ms is d in whole milliseconds, as the scripts take durations.
func Ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// A Waiter names one waiting call in a lock's line: its Client's id and a number that the
// Client never gives twice. Written as the id, a dot and the number; a Client's id has no dot,
// and a release announces to the Client whose id comes before the first dot (queue.lua).
type Waiter struct {
	Client string
	N      uint64
}

func (w Waiter) String() string { return w.Client + "." + strconv.FormatUint(w.N, 10) }

// ParseWaiter reads a waiter's name; ok is false for anything else.
func ParseWaiter(s string) (w Waiter, ok bool) {
	id, n, found := strings.Cut(s, ".")
	if !found || id == "" {
		return Waiter{}, false
	}
	num, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return Waiter{}, false
	}
	return Waiter{Client: id, N: num}, true
}

// An Announcement is what a release publishes: the name of the released key (as the releaser
// gave it) and the waiter it names, or none (Waiter "") when it is meant for every waiter of
// the key. A message wakes a waiter; it never makes one a holder.
type Announcement struct {
	Key    string
	Waiter string
}

// ParseAnnouncement reads a release's message: the key's name, a newline, and the waiter's
// name or nothing. ok is false for anything else.
func ParseAnnouncement(payload string) (a Announcement, ok bool) {
	key, waiter, found := strings.Cut(payload, "\n")
	if !found || strings.Contains(waiter, "\n") {
		return Announcement{}, false
	}
	return Announcement{Key: key, Waiter: waiter}, true
}

// String returns the message as a release publishes it.
func (a Announcement) String() string { return a.Key + "\n" + a.Waiter }

// The replies of the scripts.

var errReply = errors.New("unexpected reply")

// DecodeHeld reads the reply of a script that answers 1 or 0: release, extend, fence.
func DecodeHeld(reply any) (bool, error) {
	switch reply {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w %v", errReply, reply)
}

// A Grant is a node's yes to an acquisition; with fencing it carries that node's fencing
// counter and clock (TIME, in microseconds), read in the same step as the SET.
type Grant struct {
	Counter uint64
	Micros  uint64
}

// DecodeGrant reads the reply of an acquiring script: {0} for no, {1} for yes, and with
// fencing {1, counter, seconds, microseconds}.
func DecodeGrant(reply any) (granted bool, g Grant, err error) {
	vals, ok := reply.([]any)
	switch {
	case !ok || len(vals) == 0:
		return false, g, fmt.Errorf("%w %v", errReply, reply)
	case vals[0] == int64(0) && len(vals) == 1:
		return false, g, nil
	case vals[0] != int64(1):
		return false, g, fmt.Errorf("%w %v", errReply, reply)
	case len(vals) == 1:
		return true, g, nil
	case len(vals) != 4:
		return false, g, fmt.Errorf("%w %v", errReply, reply)
	}
	var n [3]uint64
	for i := range n {
		if n[i], err = strconv.ParseUint(fmt.Sprint(vals[i+1]), 10, 64); err != nil {
			return false, g, fmt.Errorf("%w %v: %v", errReply, reply, err)
		}
	}
	return true, Grant{Counter: n[0], Micros: n[1]*1_000_000 + n[2]}, nil
}
