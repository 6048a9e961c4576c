package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// hearAs subscribes to the channel of the Client named id on every node, until the test ends:
// a waiter of that Client is live there (it hears its hand-over), though no call of it takes
// what it is handed, as with a Client whose process is paused.
func hearAs(t *testing.T, nodes []redis.UniversalClient, id string) {
	t.Helper()
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		ps := n.Subscribe(context.Background(), names.ClientChannel(id))
		t.Cleanup(func() { ps.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := ps.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("node %d: subscribing as %s: %v", i, id, err)
		}
	}
}

// A release hands the key to the first live waiter in line on each node: the key holds that
// waiter's name until the waiter takes it or the releasing Client's lease of a place lapses.
// Nobody cuts in meanwhile, not even a call that does not wait. A waiter whose Client does not
// hear the node (its process ended: here a name in line that no Client has) is passed over at
// once, and one whose Client hears but never comes (a paused process) holds the key up for that
// lease at most: a Lock waiting behind it takes the key then.
func TestRealServersReleaseHandsTheKeyToTheFirstWaiter(t *testing.T) {
	t.Parallel()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	nodes := redistest.Clients(t, addrs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder, newcomer := realClient(t, addrs, redlock.WithNodeTimeout(time.Second)), realClient(t, addrs, redlock.WithNodeTimeout(time.Second))
	const lease = 100*time.Millisecond + 3*time.Second // the holder's: its longest retry delay and three node timeouts
	held, err := holder.Lock(ctx, "handed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes { // Lock returned at a quorum: let the last SET land
		redistest.Eventually(t, fmt.Sprintf("node %d holds the key", i), func() bool { return node.Get(ctx, "handed").Val() == held.Token() })
	}
	names, err := wire.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	dead, gone := wire.Waiter{Client: "dead", N: 1}.String(), wire.Waiter{Client: "paused", N: 1}.String()
	hearAs(t, nodes, "paused")
	for place, name := range []string{dead, gone} {
		keys, args := wire.Acquire{Keys: names.Unfenced("handed"), Token: "never", TTL: time.Minute, Waiter: name, Place: int64(place + 1),
			Lease: time.Minute}.Encode()
		for i, node := range nodes {
			if err := node.Eval(ctx, wire.AcquireScript.Source(), keys, args).Err(); err != nil {
				t.Fatalf("node %d: joining the line: %v", i, err)
			}
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes {
		redistest.Eventually(t, fmt.Sprintf("node %d handed the key to the paused waiter", i), func() bool { return node.Get(ctx, "handed").Val() == gone })
		if d := node.PTTL(ctx, "handed").Val(); d <= 0 || d > lease {
			t.Fatalf("node %d keeps the hand-over for %v, want the releasing Client's lease (%v) at most", i, d, lease)
		}
		if n := node.ZCard(ctx, companion("queue", "handed")).Val(); n != 0 {
			t.Fatalf("node %d keeps %d waiters in line, want the dead one dropped", i, n)
		}
	}
	in, err := newcomer.Inspect(ctx, "handed")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range in.Nodes {
		if in.Held || n.Token != "" || n.Waiter != gone {
			t.Fatalf("Inspect: held %v; node %d: token %q, waiter %q, want the waiter's name", in.Held, i, n.Token, n.Waiter)
		}
	}
	if l, err := newcomer.TryLock(ctx, "handed", time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a TryLock cut in on a key handed to a waiter: %v, %v", l, err)
	}
	// The waiter never takes it; the newcomer waits behind it and takes the key once the
	// hand-over lapsed.
	l, err := newcomer.Lock(ctx, "handed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// An Unlock that nobody waits for sends no message, whatever the primitive: a Client that once
// waited stays subscribed to every node, and in a fleet of such Clients a message on each
// uncontended Unlock would reach every one of them. A subscriber to every channel of the nodes
// hears nothing from Lock and Unlock of a mutex, a LockAll, a semaphore and an RWMutex (read
// and write) once the Client has waited, until a message of the test's own that follows them.
func TestRealServersUncontendedUnlockSendsNoMessage(t *testing.T) {
	t.Parallel()
	addrs := redistest.Addrs(redistest.StartN(t, 3))
	nodes := redistest.Clients(t, addrs...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, other := realClient(t, addrs, redlock.WithRetryDelay(time.Hour, time.Hour)), realClient(t, addrs)
	// c waits once, so that it listens to the nodes, as every Client in a busy fleet does.
	held, err := other.Lock(ctx, "wait-once", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "wait-once", time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	redistest.Eventually(t, "c waits in line", func() bool { return nodes[0].ZCard(ctx, companion("queue", "wait-once")).Val() == 1 })
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l := redistest.Receive(t, "c's Lock", got); l == nil || l.Unlock(ctx) != nil {
		t.Fatal("c did not get the lock, or did not release it")
	}
	for i, node := range nodes { // the last release may still be in flight
		redistest.Eventually(t, fmt.Sprintf("node %d released", i), func() bool { return node.Exists(ctx, "wait-once").Val() == 0 })
	}

	subs := make([]<-chan *redis.Message, len(nodes))
	for i, node := range nodes {
		ps := node.PSubscribe(ctx, "*")
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		subs[i] = ps.Channel()
	}
	uncontended(t, ctx, c, nodes)
	for i, node := range nodes {
		if err := node.Publish(ctx, "test-end", "end").Err(); err != nil {
			t.Fatal(err)
		}
		for m := range subs[i] {
			if m.Channel == "test-end" {
				break
			}
			t.Errorf("node %d: an uncontended Unlock sent %q on %q", i, m.Payload, m.Channel)
		}
	}
}

// uncontended takes and releases a mutex, a LockAll, a semaphore and an RWMutex (read and
// write) with c, nobody else waiting, and returns once every node let them go.
func uncontended(t *testing.T, ctx context.Context, c *redlock.Client, nodes []redis.UniversalClient) {
	t.Helper()
	sem, rw := semaphore(t, c, "quiet-sem", 2), rwMutex(t, c, "quiet-rw")
	for _, take := range []func() (*redlock.Lock, error){
		func() (*redlock.Lock, error) { return c.Lock(ctx, "quiet", time.Minute) },
		func() (*redlock.Lock, error) { return c.LockAll(ctx, []string{"{q}a", "{q}b"}, time.Minute) },
		func() (*redlock.Lock, error) { return sem.Lock(ctx, time.Minute) },
		func() (*redlock.Lock, error) { return rw.Lock(ctx, time.Minute) },
		func() (*redlock.Lock, error) { return rw.RLock(ctx, time.Minute) },
	} {
		l, err := take()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"quiet", "{q}a", "{q}b", companion("semaphore", "quiet-sem"), companion("rwlock", "quiet-rw"), companion("readers", "quiet-rw")}
	for i, node := range nodes { // Unlock returned at a quorum: let the last releases land
		redistest.Eventually(t, fmt.Sprintf("node %d released everything", i), func() bool { return node.Exists(ctx, keys...).Val() == 0 })
	}
}

// Four Clients take turns on one key while one node of five is stopped (silent) or killed
// (refusing connections): each release hands the key on through the other four nodes and wakes
// the next waiter, nobody holds the key beside another, and every Client gets all its turns.
// The retry delay is an hour, so that only the hand-over's message can wake a waiter (a waiter
// refused everywhere pauses half an hour): a wake-up that did not come stalls the test until
// its deadline. An attempt whose vote split waits for the silent node up to the node timeout
// (200 ms), as it must to count its vote, and tries again soon after.
func TestRealServersHandOverWithANodeStoppedOrKilled(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"stopped", "killed"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			ss := redistest.StartN(t, 5)
			addrs := redistest.Addrs(ss)
			const clients, turns = 4, 10
			cs := make([]*redlock.Client, clients)
			for i := range cs {
				cs[i] = realClient(t, addrs, redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithRetryDelay(time.Hour, time.Hour))
			}
			if fault == "stopped" {
				ss[4].Pause(t) // resumed before the Clients close
			} else {
				ss[4].Kill()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			var inside, overlaps atomic.Int32
			served := make([]int, clients)
			var wg sync.WaitGroup
			for i, c := range cs {
				wg.Go(func() {
					for range turns {
						l, err := c.Lock(ctx, "turns", time.Minute)
						if err != nil {
							t.Errorf("client %d after %d turns: %v", i, served[i], err)
							return
						}
						if inside.Add(1) > 1 {
							overlaps.Add(1)
						}
						time.Sleep(2 * time.Millisecond)
						inside.Add(-1)
						if err := l.Unlock(ctx); err != nil {
							t.Errorf("client %d: Unlock: %v", i, err)
							return
						}
						served[i]++
					}
				})
			}
			wg.Wait()
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d times two Clients held the key at once", n)
			}
			t.Logf("turns served: %v", served)
		})
	}
}

// realClient returns a Client over new go-redis clients of addrs, closed when t ends.
func realClient(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(redistest.Clients(t, addrs...), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
