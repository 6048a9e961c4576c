package redlockrueidis_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlockrueidis"
	"github.com/quorumlock/redlock/redlocktest"
)

// connect makes a Client over a rueidis client of its own for each node, with rueidis's
// defaults, as users make them; a cluster's is a cluster client, found by rueidis itself.
func connect(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
	nodes := make([]driver.Node, len(addrs))
	for i, addr := range addrs {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("rueidis client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		nodes[i] = redlockrueidis.Node(c)
	}
	return redlock.NewNodes(nodes, opts...)
}

func TestConformance(t *testing.T) { redlocktest.Run(t, connect) }

func TestConformanceCluster(t *testing.T) { redlocktest.RunCluster(t, connect) }

func TestNode(t *testing.T) {
	redlocktest.RunNode(t, func(t *testing.T, addr string) driver.Node {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("rueidis client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		return redlockrueidis.Node(c)
	})
}
