package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// candidates returns n Clients over ms, as n processes would have, each woken only by releases
// (the fallback timer is an hour).
func candidates(t *testing.T, ms []*miniredis.Miniredis, n int, opts ...redlock.Option) []*redlock.Client {
	t.Helper()
	cs := make([]*redlock.Client, n)
	for i := range cs {
		opts := append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second), redlock.WithRetryDelay(time.Hour, time.Hour)}, opts...)
		c, err := redlock.New(redistest.MiniClients(t, ms), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return cs
}

func election(t *testing.T, c *redlock.Client, ttl time.Duration) *redlock.Election {
	t.Helper()
	e, err := c.Election("scheduler", ttl)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Observe sends the state now, then each change: a leader, a Proclaim, no leader; renewals are
// not changes. Leader reads the same.
func TestElectionObserveAndLeader(t *testing.T) {
	t.Parallel()
	ms := redistest.Minis(t, 3)
	renewed := make(chan struct{}, 16)
	cs := candidates(t, ms, 2, redlock.WithObserver(locktrace.Observer{
		End: func(_ context.Context, call locktrace.Call, r locktrace.Return) {
			if call.Op == locktrace.OpExtend && r.Outcome == locktrace.OutcomeOK {
				select {
				case renewed <- struct{}{}:
				default:
				}
			}
		},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, watcher := election(t, cs[0], 900*time.Millisecond), election(t, cs[1], 900*time.Millisecond)
	events := watcher.Observe(ctx)
	next := func(what string) redlock.Leader {
		t.Helper()
		select {
		case l, ok := <-events:
			if !ok {
				t.Fatalf("%s: the channel closed", what)
			}
			return l
		case <-ctx.Done():
			t.Fatalf("%s: no event", what)
		}
		return redlock.Leader{}
	}
	if l := next("the state now"); l.Term != 0 || l.Value != "" {
		t.Fatalf("before any campaign: %+v", l)
	}
	if _, err := watcher.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v", err)
	}
	term, err := e.Campaign(ctx, "10.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	if l := next("the new leader"); l.Value != "10.0.0.1:8080" || l.Term != term.Term() || !l.Until.After(time.Now()) {
		t.Fatalf("leader %+v, want %q in term %d", l, "10.0.0.1:8080", term.Term())
	}
	if l, err := watcher.Leader(ctx); err != nil || l.Value != "10.0.0.1:8080" || l.Term != term.Term() {
		t.Fatalf("Leader = %+v, %v", l, err)
	}
	for range 2 { // renewals (every third of the ttl) are no events
		redistest.Receive(t, "the term renewed", renewed)
	}
	select {
	case l := <-events:
		t.Fatalf("an event without a change: %+v", l)
	default:
	}
	if err := term.Proclaim(ctx, "10.0.0.2:8080"); err != nil {
		t.Fatal(err)
	}
	if l := next("the proclamation"); l.Value != "10.0.0.2:8080" || l.Term != term.Term() || term.Value() != "10.0.0.2:8080" {
		t.Fatalf("after Proclaim: %+v", l)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := next("the end of the term"); l.Term != 0 || l.Value != "" {
		t.Fatalf("after Resign: %+v", l)
	}
	if err := term.Proclaim(ctx, "x"); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Proclaim after Resign: %v", err)
	}
	if err := term.Resign(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Resign after Resign: %v", err)
	}
	cancel()
	for range events { // closed when ctx ends
	}
}

// A leader whose renewals fail loses its term (Lost closes) by the end of its validity.
func TestElectionLostWhenRenewalsFail(t *testing.T) {
	ms := redistest.Minis(t, 3)
	cs := candidates(t, ms, 1)
	ctx := context.Background()
	term, err := election(t, cs[0], 600*time.Millisecond).TryCampaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		m.SetError("LOADING injected") // every command fails: no renewal
	}
	select {
	case <-term.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close")
	}
	for _, m := range ms {
		m.SetError("")
	}
	if left := time.Until(term.Until()); left > 0 {
		t.Fatalf("Lost closed %v before Until", left)
	}
}

// A term's validity ends before its key expires on a quorum of nodes: Lost closes before
// anyone else can be elected. Checked on real servers, after the campaign and after a renewal.
func TestRealServersTermEndsBeforeItsKeyExpires(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	nodes := redistest.Clients(t, redistest.Addrs(ss)...)
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	term, err := election(t, c, 3*time.Second).TryCampaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		lasting := 0
		for _, n := range nodes {
			if ttl := n.PTTL(ctx, companion("election", "scheduler")).Val(); time.Now().Add(ttl).After(term.Until()) {
				lasting++
			}
		}
		if lasting < 2 {
			t.Fatalf("the key outlasts Until (%v) on %d nodes, not a quorum", term.Until(), lasting)
		}
		elapse(2200 * time.Millisecond) // the Client renews the term when a third of the ttl is left
	}
}

// Close ends the terms its Client holds, and the next candidate leads at once; the election's
// keys never collide with a lock of the same name.
func TestElectionCloseHandsOnAndKeysAreTheirOwn(t *testing.T) {
	ms := redistest.Minis(t, 3)
	waiting, watch := watchWaits()
	cs := candidates(t, ms, 2, watch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := election(t, cs[0], 10*time.Second).Campaign(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	l, err := cs[0].TryLock(ctx, "scheduler", 10*time.Second)
	if err != nil {
		t.Fatalf("a lock named as the election: %v", err)
	}
	l.Unlock(ctx)
	got := make(chan *redlock.Term, 1)
	go func() {
		term, err := election(t, cs[1], 10*time.Second).Campaign(ctx, "second")
		if err != nil {
			t.Error(err)
		}
		got <- term
	}()
	waiting.await(t)
	cs[0].Close()
	if term := redistest.Receive(t, "the second candidate's Campaign returns", got); term != nil && term.Value() != "second" {
		t.Fatalf("value %q", term.Value())
	}
}

// Lead runs fn while leading and resigns when fn returns.
func TestElectionLead(t *testing.T) {
	ms := redistest.Minis(t, 3)
	cs := candidates(t, ms, 1)
	ctx := context.Background()
	e := election(t, cs[0], 10*time.Second)
	var during redlock.Leader
	err := e.Lead(ctx, "me", func(ctx context.Context, term *redlock.Term) error {
		var err error
		during, err = e.Leader(ctx)
		return err
	})
	if err != nil || during.Value != "me" || during.Term == 0 {
		t.Fatalf("Lead = %v; the leader during fn: %+v", err, during)
	}
	if _, err := e.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("after Lead: %v", err)
	}
}

func TestElectionBadInputSendsNothing(t *testing.T) {
	ms := redistest.Minis(t, 3)
	c := candidates(t, ms, 1)[0]
	ctx := context.Background()
	if _, err := c.Election("", time.Second); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := c.Election("x", time.Microsecond); err == nil {
		t.Error("bad ttl accepted")
	}
	e := election(t, c, time.Second)
	before := commands(ms)
	if _, err := e.Campaign(ctx, ""); err == nil {
		t.Error("Campaign with an empty value")
	}
	if _, err := e.TryCampaign(ctx, ""); err == nil {
		t.Error("TryCampaign with an empty value")
	}
	if err := e.Lead(ctx, "v", nil); err == nil {
		t.Error("Lead with a nil fn")
	}
	if n := commands(ms) - before; n != 0 {
		t.Errorf("bad input sent %d commands", n)
	}
	term, err := e.TryCampaign(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Proclaim(ctx, ""); err == nil {
		t.Error("Proclaim of an empty value")
	}
	term.Resign(ctx)
}

// A slow reader of Observe finds the latest state, not a backlog; Observe keeps up across a
// node's restart.
func TestRealServersObserveIsLatestAndSurvivesARestart(t *testing.T) {
	t.Parallel()
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	newClient := func() *redlock.Client {
		c, err := redlock.New(redistest.Clients(t, addrs...), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	leader, watcher := election(t, newClient(), 3*time.Second), election(t, newClient(), 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := watcher.Observe(ctx)
	next := func() redlock.Leader {
		t.Helper()
		select {
		case l := <-events:
			return l
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return redlock.Leader{}
	}
	next() // no leader
	term, err := leader.Campaign(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v2", "v3", "v4"} {
		if err := term.Proclaim(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the observer hears of every change; nobody reads
	if l := next(); l.Value != "v4" {
		t.Fatalf("a slow reader got %+v, not the latest state", l)
	}
	select {
	case l := <-events:
		t.Fatalf("a backlog after the latest state: %+v", l)
	case <-time.After(200 * time.Millisecond):
	}
	ss[0].Restart(t)
	if err := term.Proclaim(ctx, "v5"); err != nil {
		t.Fatal(err)
	}
	if l := next(); l.Value != "v5" {
		t.Fatalf("after a node's restart: %+v", l)
	}
	term.Resign(ctx)
	if l := next(); l.Term != 0 {
		t.Fatalf("after Resign: %+v", l)
	}
}
