package simulate

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// client returns a go-redis client over l, closed with the test.
func testClient(t *testing.T, l *link) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Dialer: l.dial, MaxRetries: -1, DialerRetries: 1, Protocol: 2, DisableIdentity: true,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// exists reports whether the node behind rdb has key, failing t when it cannot tell.
func exists(t *testing.T, rdb *redis.Client, key string) bool {
	t.Helper()
	got, err := rdb.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return got == 1
}

func TestNodeFaults(t *testing.T) {
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		n := newMiniNode("A", time.Now())
		defer n.close()
		l := newLink(n)
		rdb := testClient(t, l)
		has := func(key string) bool { return exists(t, rdb, key) }
		rdb.Set(ctx, "k", "v", 10*time.Second)

		// Keys expire by the node's clock: true time 5 s at rate 2 is 10 s there.
		n.clock.setRate(2)
		time.Sleep(5 * time.Second)
		if has("k") {
			t.Fatal("a key outlived its TTL on the node's fast clock")
		}
		n.clock.setRate(1)

		// A jump forward expires at once.
		rdb.Set(ctx, "k", "v", 10*time.Second)
		n.clock.jump(11 * time.Second)
		if has("k") {
			t.Fatal("a key outlived a jump past its TTL")
		}

		// Down: calls fail; back with data: the key is there, and still expires on time.
		rdb.Set(ctx, "k", "v", 10*time.Second)
		n.crash()
		if err := rdb.Get(ctx, "k").Err(); err == nil {
			t.Fatal("a crashed node answered")
		}
		n.restart(true)
		if !has("k") {
			t.Fatal("restart keeping data lost the key")
		}
		time.Sleep(10 * time.Second)
		if has("k") {
			t.Fatal("a key outlived its TTL across a restart")
		}

		// Back without data.
		rdb.Set(ctx, "k", "v", 0)
		n.crash()
		n.restart(false)
		rdb.Ping(ctx) // fails on the connection the crash broke, and drops it
		if has("k") {
			t.Fatal("restart losing data kept the key")
		}
	})
}

func TestFailoverLosesWhatWasNotReplicated(t *testing.T) {
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		n := newMiniNode("A", time.Now())
		defer n.close()
		n.withReplica()
		rdb := testClient(t, newLink(n))
		rdb.Set(ctx, "old", "v", time.Minute)
		n.replicate()
		rdb.Set(ctx, "new", "v", time.Minute)
		n.failover()
		rdb.Ping(ctx) // fails on the connection to the dead master, and drops it
		got, err := rdb.Exists(ctx, "old", "new").Result()
		if err != nil {
			t.Fatalf("EXISTS after failover: %v", err)
		}
		if got != 1 {
			t.Fatalf("%d keys after failover, want only the replicated one", got)
		}
	})
}

func TestLinkFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMiniNode("A", time.Now())
		defer n.close()
		l := newLink(n)
		rdb := testClient(t, l)
		linkFaults(t, l, rdb)
		// In memory, a new connection across a partition fails with the link's own error.
		l.setCut(true)
		rdb.Get(context.Background(), "k") // fails on the connection the cut broke, and drops it
		if err := rdb.Get(context.Background(), "k").Err(); !errors.Is(err, errPartitioned) {
			t.Fatalf("GET across a partition: %v", err)
		}
	})
}

// waitingServer is a node's server whose dial waits until released; only dial is used.
type waitingServer struct {
	server
	dialing, release chan struct{}
}

func (s waitingServer) dial(context.Context) (net.Conn, error) {
	close(s.dialing)
	<-s.release
	return nil, errNodeDown
}

// A dial that waits for its node (an in-memory node waits for its own lock) does not hold its
// link meanwhile. If it did, the link's pump, which takes the link for every reply it reads,
// would wait behind it; a script that holds the node's lock while it publishes to a subscriber
// of the link would wait for the pump; and the dial would wait for the script: the run hung
// for good on a loaded machine.
func TestLinkDialHoldsNothing(t *testing.T) {
	s := waitingServer{dialing: make(chan struct{}), release: make(chan struct{})}
	l := newLink(&node{name: "A", clock: newSkew(time.Now()), server: s})
	dialed := make(chan struct{})
	go func() {
		l.dial(context.Background(), "", "")
		close(dialed)
	}()
	<-s.dialing
	drawn := make(chan struct{})
	go func() {
		l.reply() // what the pump does for every reply
		close(drawn)
	}()
	select {
	case <-drawn:
	case <-time.After(5 * time.Second):
		t.Error("a reply waited for a dial that waits for its node")
	}
	close(s.release)
	<-dialed
	<-drawn
}

// linkFaults checks each fault of l on a client that reaches the node through it, and leaves
// l healed: on either backend.
func linkFaults(t *testing.T, l *link, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()

	// A lost reply: the command ran, the client never heard.
	l.setDrop("set")
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Fatal("a lost reply arrived")
	}
	l.setDrop("")
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v: the command behind the lost reply did not run", got, err)
	}

	// Latency delays the request.
	l.setLatency(50 * time.Millisecond)
	start := time.Now()
	rdb.Get(ctx, "k")
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("GET took %v, want at least the 50ms latency", took)
	}
	l.setLatency(0)

	// A reply delay holds every reply; a share of 1 loses every one.
	rng := rand.New(rand.NewPCG(1, 2))
	l.setReplies(replyFault{Min: 40 * time.Millisecond, Max: 60 * time.Millisecond}, rng)
	for range 3 {
		start := time.Now()
		if err := rdb.Get(ctx, "k").Err(); err != nil {
			t.Fatalf("GET with slow replies: %v", err)
		}
		if took := time.Since(start); took < 40*time.Millisecond {
			t.Fatalf("GET took %v, want at least the 40ms reply delay", took)
		}
	}
	// Replies keep their order, however their delays were drawn.
	l.setReplies(replyFault{Max: 40 * time.Millisecond}, rng)
	pipe := rdb.Pipeline()
	incrs := make([]*redis.IntCmd, 20)
	for i := range incrs {
		incrs[i] = pipe.Incr(ctx, "n")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("a pipeline with slow replies: %v", err)
	}
	for i, c := range incrs {
		if c.Val() != int64(i+1) {
			t.Fatalf("INCR %d of a pipeline read %d: replies out of order", i+1, c.Val())
		}
	}
	l.setReplies(replyFault{Loss: 1}, rng)
	if err := rdb.Set(ctx, "k", "w", 0).Err(); err == nil {
		t.Fatal("a lost reply arrived")
	}
	l.setReplies(replyFault{}, rng)
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "w" {
		t.Fatalf("GET = %q, %v: the command behind the lost reply did not run", got, err)
	}

	// A partition breaks open connections and refuses new ones, until healed.
	l.setCut(true)
	for range 2 {
		if err := rdb.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
			t.Fatalf("GET across a partition: %v", err)
		}
	}
	l.setCut(false)
	if err := rdb.Get(ctx, "k").Err(); err != nil {
		t.Fatalf("GET after healing: %v", err)
	}
}

func TestClientClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClientClock(time.Now())
		c.skew.setRate(0.5)
		start := c.now()
		c.sleep(time.Second) // a second on the slow clock is two in true time
		if got := c.now().Sub(start); got != time.Second {
			t.Fatalf("clock advanced %v during a 1s sleep on itself", got)
		}
		c.skew.setRate(1)
		c.pauseAfterQuorum(time.Minute)
		before := time.Now()
		c.Now() // an attempt's first reading: no pause
		c.Now() // its second: the pause
		if got := time.Since(before); got != time.Minute {
			t.Fatalf("paused %v, want a minute", got)
		}
	})
}
