package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// Inspect shows who holds a key on each node, with the owner its Client stored; a stopped node
// is reported with its error, not as a failure of the whole call.
func TestRealServersInspect(t *testing.T) {
	// Not parallel: its timing is for a machine running one test at a time.
	ss := redistest.StartN(t, 3)
	nodes := redistest.Clients(t, redistest.Addrs(ss)...)
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithOwner("web-1 (pid 42)"), redlock.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	in, err := c.Inspect(ctx, "orders")
	if err != nil || in.Held || len(in.Nodes) != 3 || in.Nodes[0].Token != "" {
		t.Fatalf("a free key: %+v, %v", in, err)
	}
	l, err := c.Lock(ctx, "orders", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "every node holds the key and its fencing token", func() bool {
		in, err = c.Inspect(ctx, "orders")
		for _, n := range in.Nodes {
			if n.Token == "" || n.Fence != l.Fence() {
				return false
			}
		}
		return err == nil
	})
	if !in.Held || in.Token != l.Token() || in.Owner != "web-1 (pid 42)" || in.Key != "orders" {
		t.Fatalf("held: %+v", in)
	}
	for i, n := range in.Nodes {
		if n.Token != l.Token() || n.Owner != in.Owner || n.TTL <= 9*time.Second || n.TTL > 10*time.Second || n.Fence != l.Fence() || n.Err != nil {
			t.Errorf("node %d: %+v", i, n)
		}
	}
	ss[2].Pause(t)
	in, err = c.Inspect(ctx, "orders")
	if err != nil || !in.Held || in.Nodes[2].Err == nil || !strings.Contains(in.Nodes[2].Err.Error(), "node 2") {
		t.Fatalf("with a node stopped: %+v, %v", in, err)
	}
	ss[0].Pause(t)
	ss[1].Pause(t)
	if _, err := c.Inspect(ctx, "orders"); err == nil {
		t.Fatal("no node answered, and no error")
	}
	if _, err := c.Inspect(ctx, ""); err == nil {
		t.Fatal("an empty key inspected")
	}
}

// Inspect of a Semaphore's or an RWMutex's name shows its holders.
func TestInspectPrimitives(t *testing.T) {
	_, c := cluster(t, 3, redlock.WithOwner("job"))
	ctx := context.Background()
	s := semaphore(t, c, "pool", 2)
	a, err := s.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "both holders on a quorum", func() bool {
		in, err := c.Inspect(ctx, "pool")
		return err == nil && in.Held && (in.Token == a.Token()+","+b.Token() || in.Token == b.Token()+","+a.Token())
	})
	in, err := c.Inspect(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if in.Owner != "job,job" {
		t.Fatalf("owners %q", in.Owner)
	}
	m := rwMutex(t, c, "doc")
	w, err := m.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the writer on a quorum", func() bool {
		in, err := c.Inspect(ctx, "doc")
		return err == nil && in.Held && in.Token == w.Token()
	})
}

func TestWithOwnerRefusesBadInput(t *testing.T) {
	nodes := redistest.MiniClients(t, redistest.Minis(t, 1))
	for _, owner := range []string{"", strings.Repeat("x", 129), "a\nb", "tab\there"} {
		if _, err := redlock.New(nodes, redlock.WithOwner(owner)); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("WithOwner(%q): %v", owner, err)
		}
	}
	c, err := redlock.New(nodes, redlock.WithOwner("ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.TryLock(context.Background(), "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(l.Token(), "~ok") {
		t.Fatalf("token %q carries no owner", l.Token())
	}
	r, err := c.Resume(context.Background(), "k", l.Token(), time.Second)
	if err != nil {
		t.Fatalf("Resume of a token with an owner: %v", err)
	}
	if err := r.Unlock(context.Background()); err != nil && !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatal(err)
	}
}
