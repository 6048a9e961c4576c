package wire

import (
	"slices"
	"strconv"
	"time"
)

// The arguments of each script. Encode returns its KEYS and ARGV, in the order the script
// reads them; nothing else writes a script's arguments. A key named in an announcement travels
// in ARGV, as the Client named it, so that a node that rewrites keys (a vote of a cluster) does
// not change it.

// Acquire is acquire.lua's call: a waiter's attempt, or any attempt with fencing.
type Acquire struct {
	Keys   MutexKeys // Fence "" without fencing
	Token  string
	TTL    time.Duration
	Waiter string        // "" for an attempt that takes no place in line
	Place  int64         // the waiter's place: when it began waiting
	Lease  time.Duration // how long its place lasts unless an attempt renews it, when first in line
	Behind time.Duration // the same when another waiter is ahead of it on the node (0: Lease)
	// Channel is the Clients' channel of hand-overs (see Release), where a waiter ahead of this
	// one is asked whether it hears; Leased is set for a Client with a cluster among its nodes,
	// whose waiters' places also need leases (see hand.lua's hears).
	Channel string
	Leased  bool
}

func (a Acquire) Encode() (keys, args []string) {
	all := []string{a.Keys.Lock, a.Keys.Queue, a.Keys.Leases, a.Keys.Fence,
		a.Token, Ms(a.TTL), a.Waiter, strconv.FormatInt(a.Place, 10), Ms(a.Lease), Ms(a.Behind),
		a.Channel, a.Keys.Lock, leased(a.Leased)}
	keys, args = all[:4:4], all[4:] // one allocation for both
	if a.Keys.Fence == "" {
		keys = keys[:3:3]
	}
	return keys, args
}

// Release is release.lua's call: Unlock's, announced on Channel ("" for none), or with
// Rollback a failed attempt's roll-back, which gives the key only to the first live waiter,
// if it is not the attempt's own. Waiter is, for Unlock, the waiter that acquired the lock
// ("" for none), which leaves the line of every node; for a roll-back, the attempt's waiter,
// which goes back to its place (Place) where it took the key. Lease is the releasing Client's
// lease of a place in line: a roll-back's waiter's, and the longest a key handed to a waiter
// waits for it (above 0). Leased is set for a cluster's Client (see Acquire).
type Release struct {
	Keys     MutexKeys
	Token    string
	Channel  string
	Waiter   string
	Rollback bool
	Place    int64
	Lease    time.Duration
	Leased   bool
}

func (r Release) Encode() (keys, args []string) {
	all := []string{r.Keys.Lock, r.Keys.Queue, r.Keys.Leases, r.Keys.Watch,
		r.Token, r.Channel, r.Keys.Lock, r.Waiter, rollback(r.Rollback), strconv.FormatInt(r.Place, 10), Ms(r.Lease),
		leased(r.Leased)}
	return all[:4:4], all[4:] // one allocation for both
}

// rollback is the argument that marks a release as a failed attempt's roll-back.
func rollback(b bool) string {
	if b {
		return "rollback"
	}
	return ""
}

// leased is the argument that marks a waiter's place as needing a lease (see hand.lua).
func leased(b bool) string {
	if b {
		return "lease"
	}
	return ""
}

// Leave is leave.lua's call: a waiter gives up its place (Lease as in Release).
type Leave struct {
	Keys    MutexKeys
	Waiter  string
	Channel string
	Lease   time.Duration
}

func (l Leave) Encode() (keys, args []string) {
	return []string{l.Keys.Lock, l.Keys.Queue, l.Keys.Leases, l.Keys.Watch}, []string{l.Waiter, l.Channel, l.Keys.Lock, Ms(l.Lease)}
}

// Extend is extend.lua's call, for a lock key (a mutex's, or an RWMutex's writer), and
// holders_extend.lua's, for a set of holders (a semaphore's, or an RWMutex's readers).
type Extend struct {
	Key   string
	Token string
	TTL   time.Duration
}

func (e Extend) Encode() (keys, args []string) {
	return []string{e.Key}, []string{e.Token, Ms(e.TTL)}
}

// Fence is fence.lua's call: fencing's second round.
type Fence struct {
	Keys  MutexKeys
	Token string
	Fence uint64
}

func (f Fence) Encode() (keys, args []string) {
	return []string{f.Keys.Lock, f.Keys.Fence}, []string{f.Token, strconv.FormatUint(f.Fence, 10)}
}

// SemaphoreAcquire is semaphore.lua's call; Watch is Watching's.
type SemaphoreAcquire struct {
	Keys    SemaphoreKeys
	Token   string
	TTL     time.Duration
	Permits int
	Watch   string
}

func (s SemaphoreAcquire) Encode() (keys, args []string) {
	return []string{s.Keys.Holders, s.Keys.Watch}, []string{s.Token, Ms(s.TTL), strconv.Itoa(s.Permits), s.Watch}
}

// HoldersRelease is holders_release.lua's call, announced as Announce on Channel ("" for none)
// while Watch, the mark of a waiting call, lives.
type HoldersRelease struct {
	Holders  string
	Watch    string
	Token    string
	Channel  string
	Announce string
}

func (h HoldersRelease) Encode() (keys, args []string) {
	return []string{h.Holders, h.Watch}, []string{h.Token, h.Channel, h.Announce}
}

// ReadAcquire is read.lua's call; Watch is Watching's.
type ReadAcquire struct {
	Keys  RWMutexKeys
	Token string
	TTL   time.Duration
	Watch string
}

func (r ReadAcquire) Encode() (keys, args []string) {
	return []string{r.Keys.Writer, r.Keys.Readers, r.Keys.Mark, r.Keys.Watch}, []string{r.Token, Ms(r.TTL), r.Watch}
}

// WriteAcquire is write.lua's call; a waiting writer names itself and marks the lock.
type WriteAcquire struct {
	Keys   RWMutexKeys
	Token  string
	TTL    time.Duration
	Waiter string // "" for an attempt that does not wait
	Watch  string // Watching's
}

func (w WriteAcquire) Encode() (keys, args []string) {
	return []string{w.Keys.Writer, w.Keys.Readers, w.Keys.Mark, w.Keys.Watch}, []string{w.Token, Ms(w.TTL), w.Waiter, w.Watch}
}

// WriteRelease is write_release.lua's call; Waiter is the name of the waiting writer that
// acquired, whose mark goes ("" for none).
type WriteRelease struct {
	Keys    RWMutexKeys
	Token   string
	Channel string
	Waiter  string
}

func (w WriteRelease) Encode() (keys, args []string) {
	return []string{w.Keys.Writer, w.Keys.Mark, w.Keys.Watch}, []string{w.Token, w.Channel, w.Keys.Writer, w.Waiter}
}

// WriteAbandon is write_abandon.lua's call: a waiting writer gives up.
type WriteAbandon struct {
	Keys    RWMutexKeys
	Waiter  string
	Channel string
}

func (w WriteAbandon) Encode() (keys, args []string) {
	return []string{w.Keys.Mark, w.Keys.Watch}, []string{w.Waiter, w.Channel, w.Keys.Writer}
}

// MultiAcquire is multi_extend.lua's call and claim.lua's.
type MultiAcquire struct {
	Keys  []string // the lock keys
	Token string
	TTL   time.Duration
}

func (m MultiAcquire) Encode() (keys, args []string) {
	return m.Keys, []string{m.Token, Ms(m.TTL)}
}

// MultiWait is multi_acquire.lua's call: MultiAcquire's, and the keys' marks that a call waits
// for their release (Watches, one a key), Watch as Watching's.
type MultiWait struct {
	MultiAcquire
	Watches []string
	Watch   string
}

func (m MultiWait) Encode() (keys, args []string) {
	return append(slices.Clip(m.Keys), m.Watches...), []string{m.Token, Ms(m.TTL), m.Watch}
}

// MultiRelease is multi_release.lua's call (Lease as in Release).
type MultiRelease struct {
	Locks    []MutexKeys
	Token    string
	Channel  string
	Rollback bool // a failed attempt's: only each key's first live waiter is told
	Lease    time.Duration
}

func (m MultiRelease) Encode() (keys, args []string) {
	n := len(m.Locks)
	keys = make([]string, 4*n)
	args = make([]string, 4, 4+n)
	args[0], args[1], args[2], args[3] = m.Token, m.Channel, rollback(m.Rollback), Ms(m.Lease)
	for i, k := range m.Locks {
		keys[i], keys[n+i], keys[2*n+i], keys[3*n+i] = k.Lock, k.Queue, k.Leases, k.Watch
		args = append(args, k.Lock)
	}
	return keys, args
}

// Elect is elect.lua's call: a new term's second round, or Proclaim's.
type Elect struct {
	Keys    ElectionKeys
	Token   string
	Term    uint64
	Version uint64
	Value   string
	Channel string
}

func (e Elect) Encode() (keys, args []string) {
	return []string{e.Keys.Lock, e.Keys.Fence, e.Keys.Value},
		[]string{e.Token, strconv.FormatUint(e.Term, 10), strconv.FormatUint(e.Version, 10), e.Value, e.Channel, e.Keys.Value}
}

// ElectExtend is elect_extend.lua's call.
type ElectExtend struct {
	Keys  ElectionKeys
	Token string
	TTL   time.Duration
}

func (e ElectExtend) Encode() (keys, args []string) {
	return []string{e.Keys.Lock, e.Keys.Value}, []string{e.Token, Ms(e.TTL)}
}

// Resign is resign.lua's call: a term's end, announced on Channel, or with Rollback a failed
// campaign's roll-back (Waiter, Place, Lease and Leased as in Release).
type Resign struct {
	Keys     ElectionKeys
	Token    string
	Channel  string
	Waiter   string
	Rollback bool
	Place    int64
	Lease    time.Duration
	Leased   bool
}

func (r Resign) Encode() (keys, args []string) {
	args = []string{r.Token, r.Channel, r.Keys.Lock, r.Waiter, r.Keys.Value, rollback(r.Rollback),
		strconv.FormatInt(r.Place, 10), Ms(r.Lease), leased(r.Leased)}
	return []string{r.Keys.Lock, r.Keys.Queue, r.Keys.Leases, r.Keys.Value, r.Keys.Watch}, args
}

// Inspect is inspect.lua's call: every key that may hold the lock of one name.
type Inspect struct {
	Mutex     MutexKeys
	RWMutex   RWMutexKeys
	Semaphore SemaphoreKeys
	Value     string // an election's value ("" to read none: the name of a key that is not one)
}

func (i Inspect) Encode() (keys, args []string) {
	return []string{i.Mutex.Lock, i.Mutex.Fence, i.RWMutex.Writer, i.RWMutex.Readers, i.Semaphore.Holders, i.Value}, nil
}

// Watching is how long a mark that a call waits for a release lasts, in ms as the scripts take
// it: the lease of a waiting call's place, or "0" for a call that does not wait. A waiting call
// without a place in a line (a LockAll's, a semaphore's, an RWMutex's) renews its mark with
// every attempt, and a release announces itself to every Client only while such a mark lives:
// an uncontended release sends no message.
func Watching(waiter string, lease time.Duration) string {
	if waiter == "" {
		return "0"
	}
	return Ms(lease)
}
