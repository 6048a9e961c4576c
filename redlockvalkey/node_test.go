package redlockvalkey_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlockvalkey"
)

// connect makes a Client over a valkey-go client of its own for each node, with valkey-go's
// defaults, as users make them; a cluster's is a cluster client, found by valkey-go itself.
func connect(t *testing.T, addrs []string, opts ...redlock.Option) (*redlock.Client, error) {
	nodes := make([]driver.Node, len(addrs))
	for i, addr := range addrs {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("valkey-go client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		nodes[i] = redlockvalkey.Node(c)
	}
	return redlock.NewNodes(nodes, opts...)
}

func TestConformance(t *testing.T) { redlocktest.Run(t, connect) }

func TestConformanceCluster(t *testing.T) { redlocktest.RunCluster(t, connect) }

func TestNode(t *testing.T) {
	redlocktest.RunNode(t, func(t *testing.T, addr string) driver.Node {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			t.Fatalf("valkey-go client of %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		return redlockvalkey.Node(c)
	})
}
