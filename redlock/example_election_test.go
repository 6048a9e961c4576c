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
	e, _ := c.Election("migrations", 10*time.Second)
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
	e, _ := c.Election("scheduler", 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := e.Observe(ctx)
	fmt.Printf("%+v\n", <-changes)
	term, _ := e.Campaign(ctx, "a")
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
	l, _ := c.Lock(ctx, "invoices", 10*time.Second)
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
