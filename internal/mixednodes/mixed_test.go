package mixednodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
	"github.com/quorumlock/redlock/redlockrueidis"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlockvalkey"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	goleak.VerifyTestMain(m)
}

// node returns a Node of the kind i picks (go-redis, rueidis, valkey-go, in turn) over a
// client of its own to addr, with the client's defaults; t.Cleanup closes the client.
func node(t *testing.T, i int, addr string) driver.Node {
	t.Helper()
	switch i % 3 {
	case 0:
		return goredisnode.New(redistest.Client(t, addr))
	case 1:
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("rueidis client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		return redlockrueidis.Node(c)
	default:
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("valkey-go client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		return redlockvalkey.Node(c)
	}
}

// connect makes a Client over addrs whose nodes are of the three kinds, in turn.
func connect(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
	nodes := make([]driver.Node, len(addrs))
	for i, addr := range addrs {
		nodes[i] = node(t, i, addr)
	}
	return redlock.NewNodes(nodes, opts...)
}

// Every primitive, with faults, on Clients whose nodes mix the three clients.
func TestConformance(t *testing.T) { redlocktest.Run(t, connect) }

// A lock taken through a mixed Client is the same on every node, and Clients whose nodes are
// each of one kind see it held, and wait for it.
func TestOneLockOverThreeClients(t *testing.T) {
	ss := redistest.StartN(t, 3)
	addrs := redistest.Addrs(ss)
	mixed, err := connect(t, addrs, redlock.WithOwner("mixed"), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer mixed.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := mixed.Lock(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "every node holds the lock", func() bool {
		in, err := mixed.Inspect(ctx, "k")
		return err == nil && in.Nodes[0].Token == l.Token() && in.Nodes[1].Token == l.Token() && in.Nodes[2].Token == l.Token()
	})
	for kind := range 3 {
		nodes := make([]driver.Node, len(addrs))
		for i, addr := range addrs {
			nodes[i] = node(t, kind, addr)
		}
		other, err := redlock.NewNodes(nodes, redlock.WithNodeTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if in, err := other.Inspect(ctx, "k"); err != nil || !in.Held || in.Token != l.Token() || in.Owner != "mixed" {
			t.Fatalf("kind %d: Inspect: %+v, %v", kind, in, err)
		}
		if _, err := other.TryLock(ctx, "k", time.Minute); err == nil {
			t.Fatalf("kind %d: took the lock that the mixed Client holds", kind)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
