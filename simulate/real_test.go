package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/redlock/internal/redistest"
)

// realNode starts one node on the real backend, with libfaketime, and a link to it through a
// proxy; t.Cleanup stops both and checks that no server is left running.
func realNode(t *testing.T, replica bool) (*node, *link, *redis.Client) {
	t.Helper()
	b := RequireReal(t)
	n := b.newNode("A", time.Now(), Scenario{NodeClocks: true})
	n.keepOnRestart()
	if replica {
		n.withReplica()
	}
	t.Cleanup(func() {
		n.close()
		if left := redistest.ServerChildren(); len(left) > 0 {
			t.Errorf("redis-server processes left running: %v", left)
		}
	})
	if err := n.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := newLink(n)
	p, err := listen(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	rdb := redis.NewClient(&redis.Options{
		Addr: p.addr(), MaxRetries: -1, DialerRetries: 1, Protocol: 2, DisableIdentity: true,
		ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { rdb.Close() })
	return n, l, rdb
}

// serverSkew returns how far the server's clock (TIME) is from the node's clock.
func serverSkew(t *testing.T, n *node, rdb *redis.Client) time.Duration {
	t.Helper()
	before := time.Now()
	got, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	want := n.clock.read(before.Add(after.Sub(before) / 2))
	return got.Sub(want)
}

func TestRealNodeFaults(t *testing.T) {
	ctx := context.Background()
	n, _, rdb := realNode(t, false)
	has := func(key string) bool { return exists(t, rdb, key) }
	// A loaded machine may take a while to run a command: the clock checks allow for it.
	const slack = 100 * time.Millisecond
	if d := serverSkew(t, n, rdb); d.Abs() > slack {
		t.Fatalf("the server's clock is %v off the node's", d)
	}

	// A jump forward past the TTL expires the key at once: the server's own clock moved.
	rdb.Set(ctx, "k", "v", time.Minute)
	n.jump(time.Hour)
	if d := serverSkew(t, n, rdb); d.Abs() > slack {
		t.Fatalf("after a jump of an hour the server's clock is %v off the node's", d)
	}
	if has("k") {
		t.Fatal("a key outlived a jump of its node's clock past its TTL")
	}

	// A rate: the server's clock runs at it, and keys expire by it.
	n.setRate(20)
	rdb.Set(ctx, "k", "v", 4*time.Second)
	time.Sleep(300 * time.Millisecond) // 6 s at rate 20
	if d := serverSkew(t, n, rdb); d.Abs() > 20*slack {
		t.Fatalf("at rate 20 the server's clock is %v off the node's", d)
	}
	if has("k") {
		t.Fatal("a key outlived its TTL on the node's fast clock")
	}
	n.setRate(1)

	// Down: calls fail; back over its append-only file: the key is there.
	rdb.Set(ctx, "k", "v", time.Minute)
	n.crash()
	if err := rdb.Get(ctx, "k").Err(); err == nil {
		t.Fatal("a crashed node answered")
	}
	n.restart(true)
	if !has("k") {
		t.Fatal("restart keeping data lost the key")
	}
	if d := serverSkew(t, n, rdb); d.Abs() > slack {
		t.Fatalf("after a restart the server's clock is %v off the node's", d)
	}

	// Back without data.
	n.crash()
	n.restart(false)
	if has("k") {
		t.Fatal("restart losing data kept the key")
	}
	if err := n.err(); err != nil {
		t.Fatal(err)
	}
}

func TestRealFailoverLosesWhatWasNotReplicated(t *testing.T) {
	ctx := context.Background()
	n, _, rdb := realNode(t, true)
	v := n.server.(*realServer).valve
	// waitHeld waits until the master's stream of a write has reached the valve.
	waitHeld := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			v.mu.Lock()
			held := len(v.held)
			v.mu.Unlock()
			if held > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the master's replication stream never reached the valve")
			}
		}
	}
	rdb.Set(ctx, "old", "v", time.Minute)
	waitHeld()
	n.replicate()
	rdb.Set(ctx, "new", "v", time.Minute)
	waitHeld()
	n.failover()
	if err := n.err(); err != nil {
		t.Fatal(err)
	}
	rdb.Ping(ctx) // fails on the connection to the dead master, and drops it
	if got, err := rdb.Exists(ctx, "old", "new").Result(); err != nil || got != 1 {
		t.Fatalf("%d keys after failover (%v), want only the replicated one", got, err)
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("the promoted replica refuses writes: %v", err)
	}
}

func TestRealLinkFaults(t *testing.T) {
	// Not parallel: it counts every redis-server this process started.
	_, l, rdb := realNode(t, false)
	linkFaults(t, l, rdb)
}
