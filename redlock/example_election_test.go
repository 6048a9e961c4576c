package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/redlock"
)

// One instance of a service leads; the others wait in line and take over, in order, when it
// resigns (or within the ttl when it crashes). The term number is a fencing token.
func ExampleElection_Campaign() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	term, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leading as", term.Value(), "in a term > 0:", term.Term() > 0)
	if _, err := e.TryCampaign(ctx, "10.0.0.8:8080"); errors.Is(err, redlock.ErrNotAcquired) {
		fmt.Println("another candidate is refused")
	}
	term.Resign(ctx)
	// Output:
	// leading as 10.0.0.7:8080 in a term > 0: true
	// another candidate is refused
}

// Lead runs a function while leading: its context ends the moment the term can no longer be
// proved held, and the term ends when the function returns.
func ExampleElection_Lead() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	e, err := c.Election("migrations", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = e.Lead(context.Background(), "worker-3", func(ctx context.Context, t *redlock.Term) error {
		fmt.Println("running the migrations as", t.Value())
		return nil // pass t.Term() to the database to refuse a deposed leader's writes
	})
	fmt.Println("done:", err)
	// Output:
	// running the migrations as worker-3
	// done: <nil>
}

// Observe sends the current leader, then every change; Term 0 means no leader.
func ExampleElection_Observe() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := e.Observe(ctx)
	fmt.Printf("%+v\n", <-changes)
	term, err := e.Campaign(ctx, "a")
	if err != nil {
		fmt.Println(err)
		return
	}
	l := <-changes
	fmt.Println(l.Value, l.Term == term.Term())
	term.Proclaim(ctx, "b")
	fmt.Println((<-changes).Value)
	term.Resign(ctx)
	fmt.Println((<-changes).Term)
	// Output:
	// {Value: Term:0 Until:0001-01-01 00:00:00 +0000 UTC}
	// a true
	// b
	// 0
}

// Inspect shows who holds a key on each node, with the owner its Client stored (WithOwner).
func ExampleClient_Inspect() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes, redlock.WithOwner("billing-7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.Lock(ctx, "invoices", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Lock returns once a quorum holds the key; the last node takes it a moment later.
	var in redlock.Inspection
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if in, err = c.Inspect(ctx, "invoices"); err == nil && in.Nodes[0].Token != "" && in.Nodes[1].Token != "" && in.Nodes[2].Token != "" {
			break
		}
	}
	fmt.Println("held:", in.Held, "by", in.Owner, "with the lock's token:", in.Token == l.Token())
	for i, n := range in.Nodes {
		fmt.Println("node", i, n.Owner, n.TTL.Round(time.Second))
	}
	// Output:
	// held: true by billing-7 with the lock's token: true
	// node 0 billing-7 10s
	// node 1 billing-7 10s
	// node 2 billing-7 10s
}

// Election names an election and sets its terms' ttl; it sends nothing. An election never
// collides with a lock of the same name.
func ExampleClient_Election() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()

	e, err := c.Election("reports", 10*time.Second)
	fmt.Println("election:", err)
	term, err := e.Campaign(ctx, "worker-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := c.TryLock(ctx, "reports", 10*time.Second)
	fmt.Println("a lock of the same name:", err)
	lock.Unlock(ctx)
	term.Resign(ctx)

	_, err = c.Election("", 10*time.Second)
	fmt.Println("no name:", err != nil)
	// Output:
	// election: <nil>
	// a lock of the same name: <nil>
	// no name: true
}

// TryCampaign makes one attempt: it leads at once or fails with ErrNotAcquired.
func ExampleElection_TryCampaign() {
	nodes, stop := masters(3)
	defer stop()
	first, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close()
	second, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	ctx := context.Background()

	e1, err := first.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	e2, err := second.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	term, err := e1.TryCampaign(ctx, "10.0.0.7:8080")
	fmt.Println("first:", err)
	_, err = e2.TryCampaign(ctx, "10.0.0.8:8080")
	fmt.Println("second:", errors.Is(err, redlock.ErrNotAcquired))
	term.Resign(ctx)
	next, err := e2.TryCampaign(ctx, "10.0.0.8:8080")
	fmt.Println("second, after a resign:", err, next.Term() > term.Term())
	next.Resign(ctx)
	// Output:
	// first: <nil>
	// second: true
	// second, after a resign: <nil> true
}

// Leader reads who leads now, as a quorum of nodes sees it; ErrNoLeader when nobody does.
func ExampleElection_Leader() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}

	_, err = e.Leader(ctx)
	fmt.Println("before:", errors.Is(err, redlock.ErrNoLeader))
	term, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := e.Leader(ctx)
	fmt.Println("now:", l.Value, l.Term == term.Term(), err)
	term.Resign(ctx)
	_, err = e.Leader(ctx)
	fmt.Println("after a resign:", errors.Is(err, redlock.ErrNoLeader))
	// Output:
	// before: true
	// now: 10.0.0.7:8080 true <nil>
	// after a resign: true
}

// Proclaim changes the leader's value and keeps the term; readers see the new value.
func ExampleTerm_Proclaim() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}

	term, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("proclaim:", term.Proclaim(ctx, "10.0.0.7:9090"))
	l, err := e.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("value:", term.Value(), l.Value, "same term:", l.Term == term.Term())
	term.Resign(ctx)
	// Output:
	// proclaim: <nil>
	// value: 10.0.0.7:9090 10.0.0.7:9090 same term: true
}

// Resign ends the term at once: Lost closes, and the next candidate in line leads.
func ExampleTerm_Resign() {
	nodes, stop := masters(3)
	defer stop()
	first, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close()
	second, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	ctx := context.Background()
	e1, err := first.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	e2, err := second.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}

	term, err := e1.Campaign(ctx, "a")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("valid for up to 10s:", time.Until(term.Until()) <= 10*time.Second)
	next := make(chan *redlock.Term)
	go func() {
		t, err := e2.Campaign(ctx, "b") // leads once the first resigns
		if err != nil {
			fmt.Println(err)
		}
		next <- t
	}()
	fmt.Println("resign:", term.Resign(ctx))
	<-term.Lost()
	t := <-next
	if t == nil {
		return
	}
	fmt.Println("next leader:", t.Value(), "in a later term:", t.Term() > term.Term())
	fmt.Println("resign again:", errors.Is(term.Resign(ctx), redlock.ErrNotHeld))
	t.Resign(ctx)
	// Output:
	// valid for up to 10s: true
	// resign: <nil>
	// next leader: b in a later term: true
	// resign again: true
}

// Term numbers grow from one leader to the next, so a store that keeps the highest term it has
// seen refuses a deposed leader's late write, as it would a stale fencing token.
func ExampleTerm_Term() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	store := &fencedStore{}

	old, err := e.Campaign(ctx, "a")
	if err != nil {
		fmt.Println(err)
		return
	}
	old.Resign(ctx) // as if its term had been lost without its knowing
	current, err := e.Campaign(ctx, "b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("b writes:", store.Write(current.Term(), "from b"))
	fmt.Println("a writes late: refused =", store.Write(old.Term(), "from a") != nil)
	current.Resign(ctx)
	// Output:
	// b writes: <nil>
	// a writes late: refused = true
}

// Value is what the leader stands for; Until, when its term ends unless renewed (the Client
// renews it while it lasts).
func ExampleTerm_Value() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	e, err := c.Election("scheduler", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}

	term, err := e.Campaign(ctx, "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(term.Value(), "until within the ttl:", time.Until(term.Until()) <= 10*time.Second)
	term.Resign(ctx)
	// Output: 10.0.0.7:8080 until within the ttl: true
}
