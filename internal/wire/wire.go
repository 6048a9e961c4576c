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
	shaArg         any // sha as an interface value, made once
}

func newScript(name string, parts ...string) *Script {
	src := strings.Join(parts, "\n")
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &Script{name: name, src: src, sha: sha, shaArg: sha}
}

// Name returns the script's file name without ".lua", for errors and logs.
func (s *Script) Name() string { return s.name }

// Source returns the script's text.
func (s *Script) Source() string { return s.src }

// SHA1 returns the SHA1 of the script's text in hex.
func (s *Script) SHA1() string { return s.sha }

// SHA1Arg returns SHA1() as an interface value made once, for a client that takes a
// command's arguments as []any: boxing the string anew would cost an allocation a call.
func (s *Script) SHA1Arg() any { return s.shaArg }

var (
	//go:embed scripts/lib.lua
	lib string
	//go:embed scripts/queue.lua
	queueLib string
	//go:embed scripts/hand.lua
	handLib string
	//go:embed scripts/let_go.lua
	letGoLib string
	//go:embed scripts/acquire_handed.lua
	acquireHandedSrc string
	//go:embed scripts/holders.lua
	holdersLib string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/release_alone.lua
	releaseAloneSrc string
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
	//go:embed scripts/claim.lua
	claimSrc string
	//go:embed scripts/elect.lua
	electSrc string
	//go:embed scripts/elect_extend.lua
	electExtendSrc string
	//go:embed scripts/resign.lua
	resignSrc string
	//go:embed scripts/inspect.lua
	inspectSrc string
)

// The scripts. Those that read a node's clock or raise a fencing counter start with lib.lua's
// functions; those that read a lock's line of waiters with queue.lua's, with hand.lua's before
// them (a key found free with waiters in line goes to the first), and those that release a lock with
// let_go.lua's after (each path that runs most, a waiter taking a key handed to it and an
// Unlock, comes before the functions it does not need: building them costs a script a part of
// its time); the semaphore's and the readers' with holders.lua's.
var (
	AcquireScript        = newScript("acquire", acquireHandedSrc, handLib, queueLib, acquireSrc)
	ReleaseScript        = newScript("release", handLib, releaseAloneSrc, queueLib, letGoLib, releaseSrc)
	LeaveScript          = newScript("leave", handLib, queueLib, letGoLib, leaveSrc)
	ExtendScript         = newScript("extend", extendSrc)
	FenceScript          = newScript("fence", lib, fenceSrc)
	SemaphoreScript      = newScript("semaphore", lib, holdersLib, semaphoreSrc)
	HoldersExtendScript  = newScript("holders_extend", lib, holdersLib, holdersExtendSrc)
	HoldersReleaseScript = newScript("holders_release", lib, holdersLib, holdersReleaseSrc)
	ReadScript           = newScript("read", lib, holdersLib, readSrc)
	WriteScript          = newScript("write", lib, holdersLib, writeSrc)
	WriteReleaseScript   = newScript("write_release", writeReleaseSrc)
	WriteAbandonScript   = newScript("write_abandon", writeAbandonSrc)
	MultiAcquireScript   = newScript("multi_acquire", multiAcquireSrc)
	MultiExtendScript    = newScript("multi_extend", multiExtendSrc)
	MultiReleaseScript   = newScript("multi_release", handLib, queueLib, letGoLib, multiReleaseSrc)
	ClaimScript          = newScript("claim", claimSrc)
	ElectScript          = newScript("elect", lib, electSrc)
	ElectExtendScript    = newScript("elect_extend", electExtendSrc)
	ResignScript         = newScript("resign", handLib, queueLib, letGoLib, resignSrc)
	InspectScript        = newScript("inspect", inspectSrc)
)

// Ms is d in whole milliseconds, as the scripts take durations.
func Ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// A Waiter names one waiting call in a lock's line: its Client's id and a number that the
// Client never gives twice. Written as the id, a dot and the number; a Client's id has no dot,
// and a release announces to the Client whose id comes before the first dot (hand.lua).
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

// A Grant is a node's answer to an acquisition: with fencing, a yes carries that node's fencing
// counter and clock (TIME, in microseconds), read in the same step as the SET; a no to a
// waiter says how many waiters are ahead of it in the node's line (-1 when it has no place) and
// how long the key has left on the node (-1 when it is free, or unknown).
type Grant struct {
	Counter uint64
	Micros  uint64
	Ahead   int64
	Left    time.Duration
}

// DecodeGrant reads the reply of an acquiring script: {0} for no ({0, ahead, ms left} to a
// waiter), {1} for yes, and with fencing {1, counter, seconds, microseconds}.
func DecodeGrant(reply any) (granted bool, g Grant, err error) {
	vals, ok := reply.([]any)
	g.Ahead, g.Left = -1, -1
	switch {
	case !ok || len(vals) == 0:
		return false, g, fmt.Errorf("%w %v", errReply, reply)
	case vals[0] == int64(0) && len(vals) == 1:
		return false, g, nil
	case vals[0] == int64(0) && len(vals) == 3:
		n, ok1 := vals[1].(int64)
		ms, ok2 := vals[2].(int64)
		if ok1 && ok2 {
			g.Ahead, g.Left = n, max(time.Duration(ms)*time.Millisecond, -1)
			return false, g, nil
		}
		return false, g, fmt.Errorf("%w %v", errReply, reply)
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
	return true, Grant{Counter: n[0], Micros: n[1]*1_000_000 + n[2], Ahead: -1, Left: -1}, nil
}

// A Holder is one holder of a key as a node sees it: its token and the time it has left.
type Holder struct {
	Token string
	TTL   time.Duration
}

// A Reading is what inspect.lua read on one node.
type Reading struct {
	Lock    Holder   // the lock key's (Token "" when absent)
	Fence   uint64   // its fencing counter
	Writer  Holder   // an RWMutex's writer
	Readers []Holder // its live readers
	Holders []Holder // a Semaphore's live holders
	Value   string   // an election's value, as elect.lua stores it ("" for none)
}

// DecodeReading reads inspect.lua's reply.
func DecodeReading(reply any) (Reading, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 8 {
		return Reading{}, fmt.Errorf("%w %v", errReply, reply)
	}
	var r Reading
	var err error
	r.Lock, err = holder(vals[0], vals[1])
	if err == nil {
		r.Writer, err = holder(vals[3], vals[4])
	}
	if err == nil {
		r.Fence, err = strconv.ParseUint(fmt.Sprint(vals[2]), 10, 64)
	}
	if err == nil {
		r.Readers, err = holders(vals[5])
	}
	if err == nil {
		r.Holders, err = holders(vals[6])
	}
	r.Value = fmt.Sprint(vals[7])
	if err != nil {
		return Reading{}, fmt.Errorf("%w %v: %v", errReply, reply, err)
	}
	return r, nil
}

// holder reads a token ("" for none) and its PTTL in ms.
func holder(token, ms any) (Holder, error) {
	t := fmt.Sprint(token)
	if t == "" {
		return Holder{}, nil
	}
	n, err := strconv.ParseInt(fmt.Sprint(ms), 10, 64)
	return Holder{Token: t, TTL: time.Duration(max(n, 0)) * time.Millisecond}, err
}

// holders reads a flat list of token, ms.
func holders(list any) ([]Holder, error) {
	vals, ok := list.([]any)
	if !ok || len(vals)%2 != 0 {
		return nil, fmt.Errorf("holders %v", list)
	}
	var hs []Holder
	for i := 0; i < len(vals); i += 2 {
		h, err := holder(vals[i], vals[i+1])
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// A Value is an election's value as elect.lua stores it: the term, the version (Proclaim's
// count within the term) and the leader's value.
type Value struct {
	Term, Version uint64
	Value         string
}

// DecodeValue reads an election's value; ok is false for "" or anything not elect.lua's.
func DecodeValue(s string) (v Value, ok bool) {
	term, rest, found := strings.Cut(s, "\n")
	version, value, found2 := strings.Cut(rest, "\n")
	if !found || !found2 {
		return Value{}, false
	}
	var err1, err2 error
	v.Term, err1 = strconv.ParseUint(term, 10, 64)
	v.Version, err2 = strconv.ParseUint(version, 10, 64)
	v.Value = value
	return v, err1 == nil && err2 == nil
}

// The tokens a lock stores: 128 random bits in base64url (22 characters, none of them "." or
// "~"), then "." for a LockAll's, then "~" and the Client's owner (WithOwner) when it has one.

// RandomLen is the length of a token's random part.
const RandomLen = 22

// Token returns the token of random (RandomLen characters) for a lock of LockAll (multi) or
// not, with owner ("" for none).
func Token(random string, multi, owner string) string {
	t := random + multi
	if owner != "" {
		t += "~" + owner
	}
	return t
}

// MultiMark is the mark of a LockAll's token after its random part.
const MultiMark = "."

// IsMulti reports whether token is a LockAll's.
func IsMulti(token string) bool {
	return len(token) > RandomLen && token[RandomLen:RandomLen+1] == MultiMark
}

// Owner returns the owner a token of this library carries, "" for none.
func Owner(token string) string {
	if len(token) < RandomLen {
		return ""
	}
	_, owner, _ := strings.Cut(token[RandomLen:], "~")
	return owner
}
