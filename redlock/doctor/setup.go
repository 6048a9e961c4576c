package doctor

import (
	"fmt"
	"time"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A Setup is what Check checks: the nodes of a Client, and the options it is made with that
// the checks weigh.
type Setup struct {
	// Nodes are the Client's nodes, as redlock.NewNodes takes them: goredisnode.New of each
	// go-redis client given to redlock.New, or goredisnode.Votes for redlock.NewCluster's.
	Nodes       []driver.Node
	NodeTimeout time.Duration // redlock.WithNodeTimeout's; 0 for its default, 100ms
	DriftFactor float64       // redlock.WithDriftFactor's; 0 for its default, 0.01
	KeyPrefix   string        // redlock.WithKeyPrefix's
}

// A doctor is one Check's run: the nodes and what it knows of their Client.
type doctor struct {
	nodes       []driver.Node
	addrs       []string
	names       wire.Names
	id          string // names the doctor's channel and write, as a Client's id
	nodeTimeout time.Duration
	driftFactor float64
	quorum      int
	clock       clock.Clock
}

// newDoctor checks s as redlock.NewNodes would and returns its run.
func newDoctor(s Setup) (*doctor, error) {
	if len(s.Nodes) == 0 {
		return nil, fmt.Errorf("redlock: no nodes")
	}
	names, err := wire.NewNames(s.KeyPrefix)
	if err != nil {
		return nil, fmt.Errorf("redlock: %w", err)
	}
	c := &doctor{nodes: make([]driver.Node, len(s.Nodes)), addrs: make([]string, len(s.Nodes)), names: names,
		id: "doctor", nodeTimeout: s.NodeTimeout, driftFactor: s.DriftFactor, quorum: quorum.Of(len(s.Nodes)), clock: clock.Real}
	if c.nodeTimeout <= 0 {
		c.nodeTimeout = 100 * time.Millisecond
	}
	if c.driftFactor <= 0 || c.driftFactor >= 0.5 {
		c.driftFactor = 0.01
	}
	for i, n := range s.Nodes {
		if n == nil {
			return nil, fmt.Errorf("redlock: node %d is nil", i)
		}
		c.nodes[i] = n
		if t, ok := n.(driver.Tuned); ok {
			c.nodes[i] = t.ForClient(c.nodeTimeout)
		}
		if st, ok := n.(fmt.Stringer); ok {
			c.addrs[i] = st.String()
		}
	}
	return c, nil
}
