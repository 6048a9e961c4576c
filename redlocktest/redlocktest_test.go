package redlocktest_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
	"github.com/quorumlock/redlock/redlocktest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	goleak.VerifyTestMain(m)
}

// The library's own nodes, over go-redis clients with go-redis's defaults, pass the table.
func TestGoRedis(t *testing.T) {
	redlocktest.Run(t, func(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
		return redlock.New(redistest.Clients(t, addrs...), opts...)
	})
}

// So do go-redis cluster clients, one cluster a node.
func TestGoRedisCluster(t *testing.T) {
	redlocktest.RunCluster(t, func(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
		nodes := make([]redis.UniversalClient, len(addrs))
		for i, addr := range addrs {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
			t.Cleanup(func() { c.Close() })
			nodes[i] = c
		}
		return redlock.New(nodes, opts...)
	})
}

// GoRedisNode, the node New makes of each go-redis client, passes the node's own table.
func TestGoRedisNode(t *testing.T) {
	redlocktest.RunNode(t, func(t *testing.T, addr string) driver.Node {
		return goredisnode.New(redistest.Client(t, addr))
	})
}
