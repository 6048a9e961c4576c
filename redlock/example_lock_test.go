package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
)

// TryLockAll takes every key or none, in one attempt.
func ExampleClient_TryLockAll() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	first, err := locker.TryLockAll(ctx, []string{"account:alice", "account:bob"}, 10*time.Second)
	fmt.Println("alice and bob:", err)
	_, err = locker.TryLockAll(ctx, []string{"account:bob", "account:carol"}, 10*time.Second)
	fmt.Println("bob and carol:", errors.Is(err, redlock.ErrNotAcquired))
	// All or none: the refused attempt left carol free.
	carol, err := locker.TryLock(ctx, "account:carol", 10*time.Second)
	fmt.Println("carol alone:", err)
	first.Unlock(ctx)
	carol.Unlock(ctx)
	// Output:
	// alice and bob: <nil>
	// bob and carol: true
	// carol alone: <nil>
}

// KeepAlive extends the lock in the background while the work goes on, past its first ttl.
func ExampleLock_KeepAlive() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "import", 500*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := lock.KeepAlive(500 * time.Millisecond); err != nil {
		fmt.Println(err)
		return
	}
	time.Sleep(750 * time.Millisecond) // longer than the ttl: work that KeepAlive covers
	select {
	case <-lock.Lost():
		fmt.Println("lost:", lock.Err())
	default:
		fmt.Println("still held, and valid for a while yet:", time.Until(lock.Until()) > 50*time.Millisecond)
	}
	fmt.Println("released:", lock.Unlock(ctx))
	// Output:
	// still held, and valid for a while yet: true
	// released: <nil>
}

// Orphan ends a lock without releasing it: its keys stay on the nodes until its ttl, even
// after its Client closes. Here it marks that a job ran for this hour, so that no other
// process runs it again before the mark expires.
func ExampleLock_Orphan() {
	nodes, stop := masters(3)
	defer stop()
	ctx := context.Background()
	scheduler, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	other, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()

	mark, err := scheduler.Lock(ctx, "report:2026-01-02T15", 300*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("orphaned:", mark.Orphan(ctx))
	scheduler.Close() // leaves the mark too
	_, open := <-mark.Lost()
	fmt.Println("ended:", !open, "Err:", mark.Err())
	fmt.Println("Unlock:", errors.Is(mark.Unlock(ctx), redlock.ErrNotHeld))

	_, err = other.TryLock(ctx, "report:2026-01-02T15", 300*time.Millisecond)
	fmt.Println("another run is refused:", errors.Is(err, redlock.ErrNotAcquired))
	again, err := other.Lock(ctx, "report:2026-01-02T15", 300*time.Millisecond)
	fmt.Println("once the mark expired:", err, time.Now().After(mark.Until()))
	again.Unlock(ctx)
	// Output:
	// orphaned: <nil>
	// ended: true Err: <nil>
	// Unlock: true
	// another run is refused: true
	// once the mark expired: <nil> true
}

// Err says why a lock ended: nil while held and after Unlock, ErrNotHeld once lost, ErrClosed
// once Close released it.
func ExampleLock_Err() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	short, err := locker.Lock(ctx, "short", 100*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("while held:", short.Err())
	<-short.Lost() // its validity passed without an Extend
	fmt.Println("lost:", errors.Is(short.Err(), redlock.ErrNotHeld))

	long, err := locker.Lock(ctx, "long", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	locker.Close()
	fmt.Println("after Close:", errors.Is(long.Err(), redlock.ErrClosed))
	// Output:
	// while held: <nil>
	// lost: true
	// after Close: true
}

// Fence is 0 without WithFencing; with it, every acquisition of a key gets a larger token.
func ExampleLock_Fence() {
	nodes, stop := masters(3)
	defer stop()
	ctx := context.Background()
	fenced, err := redlock.New(nodes, redlock.WithFencing())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fenced.Close()
	plain, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer plain.Close()

	first, err := fenced.Lock(ctx, "stock", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	first.Unlock(ctx)
	second, err := fenced.Lock(ctx, "stock", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first > 0:", first.Fence() > 0, "second > first:", second.Fence() > first.Fence())
	second.Unlock(ctx)

	unfenced, err := plain.Lock(ctx, "other", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("without WithFencing:", unfenced.Fence())
	unfenced.Unlock(ctx)
	// Output:
	// first > 0: true second > first: true
	// without WithFencing: 0
}

// Close releases what the Client holds and ends its waiting calls, in at most about twice the
// node timeout.
func ExampleClient_Close() {
	nodes, stop := masters(3)
	defer stop()
	ctx := context.Background()
	other, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Close()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}

	daily, err := locker.Lock(ctx, "daily", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := other.Lock(ctx, "report", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	waited := make(chan error)
	go func() {
		_, err := locker.Lock(ctx, "report", time.Minute) // waits for other's lock
		waited <- err
	}()

	locker.Close()
	fmt.Println("the waiting Lock:", errors.Is(<-waited, redlock.ErrClosed))
	fmt.Println("the held lock:", errors.Is(daily.Err(), redlock.ErrClosed))
	again, err := other.TryLock(ctx, "daily", time.Minute)
	fmt.Println("released, taken by another Client at once:", err)
	_, err = locker.TryLock(ctx, "daily", time.Minute)
	fmt.Println("calls after Close:", errors.Is(err, redlock.ErrClosed))
	again.Unlock(ctx)
	report.Unlock(ctx)
	// Output:
	// the waiting Lock: true
	// the held lock: true
	// released, taken by another Client at once: <nil>
	// calls after Close: true
}

// goredisNode is a redlock.Node over a go-redis client, written against the Node contract as
// a node over any other client would be (New makes such nodes for go-redis clients itself).
// The client must send each command once (MaxRetries -1) and end each call by its context's
// deadline (ContextTimeoutEnabled).
type goredisNode struct{ c *redis.Client }

func (n goredisNode) String() string { return n.c.Options().Addr }

func (n goredisNode) Eval(ctx context.Context, s driver.Script, keys, args []string) (any, error) {
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	v, err := n.c.EvalSha(ctx, s.SHA1(), keys, argv...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = n.c.Eval(ctx, s.Source(), keys, argv...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func (n goredisNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.c.SetNX(ctx, key, value, ttl).Result()
}

func (n goredisNode) Listen(ctx context.Context, channels []string, ready func(), deliver func(channel, payload string)) error {
	sub := n.c.Subscribe(ctx, channels...)
	defer sub.Close()
	for range channels { // one confirmation a channel
		if _, err := sub.Receive(ctx); err != nil {
			return err
		}
	}
	ready()
	messages := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-messages:
			if !ok {
				return errors.New("subscription closed")
			}
			deliver(m.Channel, m.Payload)
		}
	}
}

// NewNodes takes nodes of any client, goredisNode's here. A waiter hears the holder's release
// through its nodes' Listen.
func ExampleNewNodes() {
	servers, stop := masters(3)
	defer stop()
	ctx := context.Background()

	// Two Clients, as two processes would have, each over clients of its own.
	var lockers []*redlock.Client
	for range 2 {
		var nodes []driver.Node
		for _, s := range servers {
			c := redis.NewClient(&redis.Options{
				Addr:                  s.(*redis.Client).Options().Addr,
				MaxRetries:            -1,
				ContextTimeoutEnabled: true,
			})
			defer c.Close()
			nodes = append(nodes, goredisNode{c})
		}
		locker, err := redlock.NewNodes(nodes)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer locker.Close() // before its clients: the Client does not own them
		lockers = append(lockers, locker)
	}

	held, err := lockers[0].Lock(ctx, "report", time.Minute)
	fmt.Println("acquired:", err)
	waited := make(chan *redlock.Lock)
	go func() {
		lock, err := lockers[1].Lock(ctx, "report", time.Minute)
		if err != nil {
			fmt.Println(err)
		}
		waited <- lock
	}()
	fmt.Println("released:", held.Unlock(ctx))
	next := <-waited
	fmt.Println("the waiter holds it:", next.Err() == nil)
	next.Unlock(ctx)
	// Output:
	// acquired: <nil>
	// released: <nil>
	// the waiter holds it: true
}

// New checks the nodes and options and sends nothing; a mistake is an error, never a panic.
func ExampleNew() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithNodeTimeout(200*time.Millisecond))
	fmt.Println("three nodes:", err)
	locker.Close()

	_, err = redlock.New(nil)
	fmt.Println("no nodes:", err != nil)
	_, err = redlock.New(append(nodes, nodes[0]))
	fmt.Println("a node given twice:", err != nil)
	_, err = redlock.New(nodes, redlock.WithDriftFactor(0.7))
	fmt.Println("an option out of range:", err != nil)
	// Output:
	// three nodes: <nil>
	// no nodes: true
	// a node given twice: true
	// an option out of range: true
}

// Key and Keys name what a lock holds, as given; Token is the random value on the nodes, new
// for every acquisition; Until is when the holder must stop unless it extends.
func ExampleLock_Token() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Lock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("key:", lock.Key(), "keys:", lock.Keys())
	// Lock returns once a quorum holds the key: at least 2 of the 3 nodes store the token.
	holding := 0
	for _, n := range nodes {
		if v, _ := n.Get(ctx, "orders:42").Result(); v == lock.Token() {
			holding++
		}
	}
	fmt.Println("the token is on a quorum of nodes:", holding >= 2)
	fmt.Println("valid for less than the ttl:", time.Until(lock.Until()) < 10*time.Second)
	lock.Unlock(ctx)

	again, err := locker.Lock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("a new token each time:", again.Token() != lock.Token())
	again.Unlock(ctx)

	both, err := locker.LockAll(ctx, []string{"a", "b"}, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("LockAll:", both.Key(), both.Keys())
	both.Unlock(ctx)
	// Output:
	// key: orders:42 keys: [orders:42]
	// the token is on a quorum of nodes: true
	// valid for less than the ttl: true
	// a new token each time: true
	// LockAll: a [a b]
}

// Each node that refused or failed is a *NodeError, found with errors.As among the joined
// errors: Node is its index in the nodes given to New.
func ExampleNodeError() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	// Another owner holds the key on node 2 only: a quorum still says yes.
	nodes[2].Set(ctx, "invoices", "someone-else", time.Minute)
	lock, err := locker.Lock(ctx, "invoices", 10*time.Second)
	fmt.Println("acquired on a quorum:", err)
	lock.Unlock(ctx)

	// On two nodes: no quorum.
	nodes[1].Set(ctx, "invoices", "someone-else", time.Minute)
	_, err = locker.TryLock(ctx, "invoices", 10*time.Second)
	// The errors come in the order the nodes answered; node 0 may be among them too, with "no
	// reply before the others decided".
	var refused []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ne *redlock.NodeError
		if errors.As(e, &ne) && ne.Err.Error() == "held by another owner" {
			refused = append(refused, ne.Node)
		}
	}
	slices.Sort(refused)
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired), "refused by nodes", refused)
	// Output:
	// acquired on a quorum: <nil>
	// true refused by nodes [1 2]
}

// Lost closes when the term can no longer be proved held: here its key was deleted from a
// quorum of nodes, and the next renewal found it gone.
func ExampleTerm_Lost() {
	nodes, stop := masters(3)
	defer stop()
	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	e, err := c.Election("scheduler", 300*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}

	term, err := e.Campaign(ctx, "a")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range nodes {
		n.FlushAll(ctx)
	}
	select {
	case <-term.Lost():
		fmt.Println("lost: stop acting as the leader")
	case <-time.After(5 * time.Second):
		fmt.Println("still leading")
	}
	// Output: lost: stop acting as the leader
}

// Until is the end of the validity on the local clock, shortened for clock drift: act only
// before it, and Extend to go on.
func ExampleLock_Until() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithDriftFactor(0.01))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	before := time.Now()
	lock, err := locker.Lock(ctx, "import", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	after := time.Now()
	// The attempt's start + the ttl less the drift allowance: 10 s - (10 s × 0.01 + 2 ms).
	const valid = 9898 * time.Millisecond
	fmt.Println("from the attempt's start:", !lock.Until().Before(before.Add(valid)) && !lock.Until().After(after.Add(valid)))
	lock.Unlock(ctx)
	// Output:
	// from the attempt's start: true
}

// Key is the key as given, without the prefix; Keys lists every key of a LockAll.
func ExampleLock_Keys() {
	nodes, stop := masters(3)
	defer stop()
	locker, err := redlock.New(nodes, redlock.WithKeyPrefix("app:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()
	ctx := context.Background()

	one, err := locker.Lock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(one.Key(), one.Keys())
	one.Unlock(ctx)
	all, err := locker.LockAll(ctx, []string{"{order:7}:stock", "{order:7}:invoice"}, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(all.Key(), all.Keys())
	all.Unlock(ctx)
	// Output:
	// orders:42 [orders:42]
	// {order:7}:stock [{order:7}:stock {order:7}:invoice]
}
