// Package locktrace is what a redlock Client reports of its work to an Observer: each call and
// how it ended, each round of node calls, each node's reply, waits, and each lock's end. Set an
// Observer with redlock.WithObserver; the redlockotel module turns the reports into
// OpenTelemetry metrics and spans, and the simulator draws them. A Client without an Observer
// reports nothing, at no cost. Nothing an Observer is given holds a token or a password.
package locktrace

import (
	"context"
	"time"
)

// An Observer is told what a Client does: each call and how it ended, each round of node
// calls, each node's reply, waits, and each lock's end. Each hook is optional: a nil hook is
// skipped. Set one with redlock.WithObserver.
//
// The Client calls the hooks from the goroutine of the call they describe, or, for NodeReply
// and Ended, from goroutines of its own, at once and concurrently: they must be safe for
// concurrent use, must not block, and must not call the Client or its Locks. Nothing they are
// given holds a token or a password.
type Observer struct {
	// Begin is called when a call begins, before its input is checked. It returns the context
	// that the call then runs with and that its later events carry: ctx itself, or a context
	// derived from ctx with values added (a span, say). It must not cancel it; nil means ctx.
	Begin func(ctx context.Context, call Call) context.Context
	// Round is called when a round of node calls has been decided: an attempt to acquire, an
	// Extend's or an Unlock's round. ctx is the call's, as Begin returned it.
	Round func(ctx context.Context, r Round)
	// NodeReply is called when one node's call has ended, in a goroutine of the Client, perhaps
	// after the call it was part of has returned. ctx descends from the call's.
	NodeReply func(ctx context.Context, r NodeReply)
	// Waiting is called when an acquiring call begins to wait, after its first refusal (or
	// before its first attempt, on a key the Client waited for lately), and Waited when it
	// stops waiting, just before it returns.
	Waiting, Waited func(ctx context.Context, call Call)
	// End is called when the call returns.
	End func(ctx context.Context, call Call, r Return)
	// Ended is called once for every acquired Lock when it ends: released by Unlock or Close,
	// or lost. It may be called with the Lock's mutex held, from a timer's goroutine.
	Ended func(h Holding)

	_ struct{} // Observers are made with field names
}

// An Op names a call: the method that was called, or, for the primitives' methods, the
// Client method it works like (RLock, LockAll and Semaphore.Lock are OpLock).
type Op uint8

const (
	OpLock Op = iota
	OpTryLock
	OpExtend
	OpUnlock
	OpDo
)

var opNames = [...]string{"Lock", "TryLock", "Extend", "Unlock", "Do"}

func (o Op) String() string { return opNames[o] }

// A Kind is the sort of lock a call is about.
type Kind uint8

const (
	KindMutex     Kind = iota // Client.Lock, TryLock, Do, Resume
	KindSemaphore             // a Semaphore's permit
	KindRead                  // an RWMutex for reading
	KindWrite                 // an RWMutex for writing
	KindMulti                 // LockAll
	KindElection              // an Election's term
)

var kindNames = [...]string{"mutex", "semaphore", "rwmutex.read", "rwmutex.write", "multi", "election"}

// String returns the kind's name in metrics: mutex, semaphore, rwmutex.read, rwmutex.write,
// multi or election.
func (k Kind) String() string { return kindNames[k] }

// A Call describes a call to the Client, a Lock or a primitive.
type Call struct {
	Op     Op
	Kind   Kind
	Key    string    // as given (LockAll's first key), without the prefix
	Quorum int       // nodes that must say yes
	Start  time.Time // on the Client's clock
}

// An Outcome is how a call or a round ended.
type Outcome uint8

const (
	// OutcomeOK: acquired, extended or released.
	OutcomeOK Outcome = iota
	// OutcomeRefused: not acquired (ErrNotAcquired: taken, or no quorum for any reason) or not
	// held (ErrNotHeld), while ctx lived.
	OutcomeRefused
	// OutcomeCanceled: the call's context ended first.
	OutcomeCanceled
	// OutcomeError: anything else, such as bad input or a closed Client.
	OutcomeError
)

var outcomeNames = [...]string{"ok", "refused", "canceled", "error"}

func (o Outcome) String() string { return outcomeNames[o] }

// A Return is how a call ended.
type Return struct {
	Outcome Outcome
	Err     error
	Elapsed time.Duration // from Begin, on the Client's clock, waits included
}

// A Round is one round of node calls, decided.
type Round struct {
	Outcome Outcome
	Votes   int           // nodes that said yes before the decision
	Elapsed time.Duration // from the first send to the decision
}

// A NodeOp is what a node was asked to do.
type NodeOp uint8

const (
	NodeAcquire NodeOp = iota // an attempt's acquire script, or SET NX PX
	NodeExtend                // an Extend's or Resume's
	NodeRelease               // an Unlock's, or a roll-back's
	NodeFence                 // fencing's second round, or an election's (Proclaim's too)
	NodeRead                  // Inspect's, Election.Leader's
)

var nodeOpNames = [...]string{"acquire", "extend", "release", "fence", "read"}

func (o NodeOp) String() string { return nodeOpNames[o] }

// A NodeOutcome is how one node's call ended.
type NodeOutcome uint8

const (
	NodeOK      NodeOutcome = iota // it did what was asked
	NodeTaken                      // it refused: another owner holds the key, or not this token
	NodeFailed                     // it failed: connection refused, script error, ...
	NodeTimeout                    // no reply within the time it was given, or ctx ended
)

var nodeOutcomeNames = [...]string{"ok", "taken", "error", "timeout"}

func (o NodeOutcome) String() string { return nodeOutcomeNames[o] }

// A NodeReply is one node's call, ended.
type NodeReply struct {
	Node    int // its index in the nodes given to New
	Op      NodeOp
	Outcome NodeOutcome
	Err     error         // nil when Outcome is NodeOK
	Elapsed time.Duration // on the Client's clock
}

// A Holding is an acquired Lock that has ended.
type Holding struct {
	Kind Kind
	Held time.Duration // from the acquisition (or Resume) to the end, on the Client's clock
	// Lost reports that the lock ended while held: its validity passed or an Extend found it
	// gone (Lost closed other than by Unlock), or Unlock came after the validity had passed.
	Lost bool
}
