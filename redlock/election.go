package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// ErrNoLeader is returned by Election.Leader when no quorum of nodes holds the election under
// one term.
var ErrNoLeader = errors.New("redlock: no leader")

// An Election chooses one leader among the candidates for a name, on the Client's quorum: the
// leader holds a fenced lock of the election's own (it never collides with a Lock of the same
// name), kept alive by the Client while its term lasts. Its term number is that lock's fencing
// token, so terms strictly increase from one leader to the next and any store can refuse an
// old leader's writes. Candidates wait in line, so a leader that resigns hands the leadership
// to the next candidate at once; one that crashes is followed within its ttl. The leader's value
// (an address, a name) is stored beside the term and read by Leader and Observe.
type Election struct {
	c    *Client
	name string
	ttl  time.Duration
	keys wire.ElectionKeys
}

// Election returns the election named name, whose terms last ttl unless renewed (the Client
// renews a term while it lasts: see Campaign). Bad input is an error: an empty name, a name
// longer than 1,024 bytes (as any key: the nodes must serve it within the node timeout), a ttl
// as Lock refuses it. It sends nothing.
func (c *Client) Election(name string, ttl time.Duration) (*Election, error) {
	if err := c.checkKey(name); err != nil {
		return nil, err
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	return &Election{c: c, name: name, ttl: ttl, keys: c.opts.names.Election(name)}, nil
}

// electionOps are an election's commands: a fenced single-key lock of its own whose second
// round, extension and release carry the leader's value with the term.
type electionOps struct {
	mutexOps
	keys wire.ElectionKeys
}

func (o electionOps) extend(token string, ttl time.Duration) command {
	return run(wire.ElectExtendScript, wire.ElectExtend{Keys: o.keys, Token: token, TTL: ttl})
}

func (o electionOps) release(token, channel, waiter string) command {
	return run(wire.ResignScript, wire.Resign{Keys: o.keys, Token: token, Channel: channel, Waiter: waiter, Lease: o.lease, Leased: o.leased})
}

func (o electionOps) rollback(a attempt, channel string) command {
	return run(wire.ResignScript, wire.Resign{Keys: o.keys, Token: a.token, Channel: channel, Waiter: a.waiter, Rollback: true,
		Place: a.place, Lease: o.lease, Leased: o.leased})
}

// spec returns the spec of a campaign for value.
func (e *Election) spec(value string) *spec {
	c := e.c
	return &spec{kind: locktrace.KindElection, key: e.name, need: c.quorum, wake: []string{e.keys.Lock},
		ops: electionOps{c.mutexOps(e.keys.MutexKeys), e.keys},
		fence: func(token string, term uint64) command {
			return run(wire.ElectScript, wire.Elect{Keys: e.keys, Token: token, Term: term, Version: 1, Value: value, Channel: c.self.channel})
		}}
}

// checkValue rejects a value no leader may have: an empty one, and one longer than 64 KiB, which
// every Leader and Observe reads from every node within the node timeout.
func checkValue(value string) error {
	if err := wire.CheckValue(value); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// Campaign waits until the Client leads the election with value, ctx ends or the Client closes,
// as Client.Lock waits for a lock: candidates are served in the order they began to wait. The
// term is kept until Resign, its loss (Lost closes) or Close. It fails with an error wrapping
// ErrNotAcquired, as Lock does, and, sending nothing, on an empty value or one longer than
// 64 KiB (every Leader and Observe reads it from every node within the node timeout).
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	return e.campaign(ctx, value, e.c.lock)
}

// TryCampaign makes one attempt to lead the election with value; it fails with ErrNotAcquired
// when another candidate leads.
func (e *Election) TryCampaign(ctx context.Context, value string) (*Term, error) {
	return e.campaign(ctx, value, e.c.try)
}

// campaign takes the election's lock with value by acquire (the Client's lock or try) and
// keeps its term.
func (e *Election) campaign(ctx context.Context, value string, acquire func(context.Context, *spec, time.Duration) (*Lock, error)) (*Term, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	l, err := acquire(ctx, e.spec(value), e.ttl)
	if err != nil {
		return nil, err
	}
	return e.keep(ctx, l, value)
}

// keep starts keeping the term of l.
func (e *Election) keep(ctx context.Context, l *Lock, value string) (*Term, error) {
	if err := l.keepAlive(ctx, e.ttl); err != nil {
		l.Unlock(ctx)
		return nil, err
	}
	return &Term{e: e, l: l, value: value, version: 1}, nil
}

// Lead campaigns like Campaign, then runs fn while the Client leads, and resigns when fn
// returns or panics (the panic then goes on to Lead's caller). fn's context is cancelled the
// moment the term can no longer be proved held, or Close ends it (its cause says why: it wraps
// ErrNotHeld or ErrClosed), and Lead then returns that reason joined with fn's error; else fn's
// error. fn must stop acting as the leader when its context is done.
func (e *Election) Lead(ctx context.Context, value string, fn func(ctx context.Context, t *Term) error) error {
	if fn == nil {
		return errors.New("redlock: nil fn")
	}
	if err := checkValue(value); err != nil {
		return err
	}
	l, err := e.c.lock(ctx, e.spec(value), e.ttl)
	if err != nil {
		return err
	}
	t := &Term{e: e, l: l, value: value, version: 1}
	return l.hold(ctx, e.ttl, func(ctx context.Context) error { return fn(ctx, t) })
}

// A Leader is an election's leader as a quorum of nodes sees it, or, with Term 0, the lack of
// one.
type Leader struct {
	Value string // "" in the event that says there is no leader
	Term  uint64 // 0 when there is no leader
	// Until is on the local clock the latest the term lasts without a renewal: counted from
	// when the read was sent, less the clock drift allowance, it is never later than a quorum
	// of nodes keeps the term.
	Until time.Time
}

// A Term is one leader's term, from Campaign, TryCampaign or Lead. Its methods are safe for
// concurrent use. A nil *Term, what a failed campaign returns, is no term and never panics, as
// a nil *Lock.
type Term struct {
	e *Election
	l *Lock

	mu      sync.Mutex
	value   string
	version uint64 // the value's: Proclaim's count within the term, from 1
}

// Value returns the leader's value, as the last successful Proclaim (or the campaign) set it.
func (t *Term) Value() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

// Term returns the term's number: it strictly increases from one leader of the election to the
// next (not consecutively), and serves as a fencing token.
func (t *Term) Term() uint64 { return t.lock().Fence() }

// Until returns the end of the term's drift-corrected validity on the local clock, as Lock.Until.
func (t *Term) Until() time.Time { return t.lock().Until() }

// Lost returns a channel that is closed when the term can no longer be proved held: before
// anyone else can be elected. It closes too when the term ends by Resign or Close. Like
// Lock.Lost it reads the clock: a call made once Until has passed returns it closed, even in a
// process that was paused and has not run its timers yet.
func (t *Term) Lost() <-chan struct{} { return t.lock().Lost() }

// Resign ends the term, and the next candidate in line leads at once. After the term ended, it
// returns an error wrapping ErrNotHeld.
func (t *Term) Resign(ctx context.Context) error { return t.lock().Unlock(ctx) }

// lock returns the term's lock, nil for a nil *Term (a failed campaign's), whose methods then
// hold nothing and never panic, as a nil *Lock's.
func (t *Term) lock() *Lock {
	if t == nil {
		return nil
	}
	return t.l
}

// Proclaim sets the leader's value, keeping the term. It succeeds when a quorum of nodes stored
// it within the term's validity; otherwise it returns an error wrapping ErrNotHeld (the term
// ended) or ErrNoQuorum (too few nodes answered; some may show the new value). An empty value,
// or one longer than 64 KiB, is an error that sends nothing.
func (t *Term) Proclaim(ctx context.Context, value string) error {
	if t == nil {
		return errNilLock
	}
	if err := checkValue(value); err != nil {
		return err
	}
	l, c := t.l, t.e.c
	if err := c.enter(); err != nil {
		return errors.Join(ErrNotHeld, err)
	}
	defer c.leave()
	t.mu.Lock()
	defer t.mu.Unlock()
	start := c.opts.clock.Now()
	if l.endedAt(start) {
		return errors.Join(ErrNotHeld, l.Err())
	}
	until := l.Until()
	cmd := run(wire.ElectScript, wire.Elect{Keys: t.e.keys, Token: l.token, Term: l.fence, Version: t.version + 1,
		Value: value, Channel: c.self.channel})
	rd := round[struct{}]{c: c, op: locktrace.NodeFence, cmd: cmd, decode: decodeHeld, wait: min(c.opts.nodeTimeout, until.Sub(start)), need: l.spec.need}
	out := rd.ask(ctx)
	out.rest(nil)
	if out.Quorum && c.opts.clock.Now().Before(until) {
		t.value, t.version = value, t.version+1
		return nil
	}
	return c.verdict(ctx, l.spec, out.Outcome, l.pendingNodes(), rd.wait)
}
