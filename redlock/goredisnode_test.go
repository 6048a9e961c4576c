package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// New is NewNodes over goredisnode.New: the same Client, and the same refusals.
func TestGoRedisNodeRefusedAsNewRefuses(t *testing.T) {
	cs := redistest.MiniClients(t, redistest.Minis(t, 2))
	var typedNil *redis.Client
	for _, tc := range []struct {
		name    string
		clients []redis.UniversalClient
		want    string
	}{
		{"no nodes", nil, "redlock: no nodes"},
		{"nil", []redis.UniversalClient{cs[0], nil}, "redlock: node 1 is nil"},
		{"typed nil", []redis.UniversalClient{typedNil, cs[0]}, "redlock: node 0 is nil"},
		{"twice", []redis.UniversalClient{cs[0], cs[1], cs[0]}, "redlock: node 2 has the same address as node 0"},
	} {
		_, err := redlock.New(tc.clients)
		nodes := make([]driver.Node, len(tc.clients))
		for i, c := range tc.clients {
			nodes[i] = goredisnode.New(c)
		}
		_, errNodes := redlock.NewNodes(nodes)
		if err == nil || errNodes == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.HasPrefix(errNodes.Error(), tc.want) {
			t.Errorf("%s: New: %v; NewNodes over goredisnode.New: %v; want %q", tc.name, err, errNodes, tc.want)
		}
	}
	if _, err := redlock.NewNodes([]driver.Node{goredisnode.New(cs[0]), goredisnode.New(cs[1])}, redlock.WithNodeTimeout(-1)); err == nil {
		t.Error("an option out of range accepted")
	}
}

// A goredisnode.New over a *redis.ClusterClient is a whole Redis Cluster, as in New: keys that one
// script would touch in two hash slots are refused by the node, before anything is sent.
func TestGoRedisNodeOverACluster(t *testing.T) {
	var nodes []driver.Node
	for range 3 {
		m := miniredis.RunT(t)
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}})
		t.Cleanup(func() { cc.Close() })
		nodes = append(nodes, goredisnode.New(cc))
	}
	c, err := redlock.NewNodes(nodes, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.TryLockAll(ctx, []string{"a", "b"}, time.Minute); err == nil || !strings.Contains(err.Error(), "are in hash slots") {
		t.Fatalf("keys in two slots on a cluster: %v", err)
	}
	l, err := c.TryLockAll(ctx, []string{"{a}1", "{a}2"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock(ctx)
}

// Calls from many goroutines to a goredisnode.New over a *redis.Client go out in batches, as New's
// nodes send them: one pipeline for the calls that queued behind one in flight.
func TestGoRedisNodeBatches(t *testing.T) {
	ss := redistest.StartN(t, 3)
	var pipelines atomic.Int64
	nodes := make([]driver.Node, len(ss))
	for i, s := range ss {
		c := redistest.Client(t, s.Addr)
		c.AddHook(countPipelines{&pipelines})
		nodes[i] = goredisnode.New(c)
	}
	c, err := redlock.NewNodes(nodes, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			<-start
			for i := range 20 {
				l, err := c.TryLock(ctx, fmt.Sprintf("k%d-%d", g, i), time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				l.Unlock(ctx)
			}
		})
	}
	close(start)
	wg.Wait()
	if pipelines.Load() == 0 {
		t.Fatal("640 locks from 32 goroutines, and not one batch")
	}
}

// countPipelines is a go-redis hook that counts the pipelines of the library's commands (not
// those that go-redis sends to set a connection up).
type countPipelines struct{ n *atomic.Int64 }

func (countPipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (countPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h countPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n := cmds[0].Name(); len(cmds) > 1 && (n == "evalsha" || n == "eval" || n == "set") {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}
