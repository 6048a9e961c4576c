// Package redlock is a distributed lock over N independent Redis masters (the Redlock
// algorithm). An acquisition asks every node at once and succeeds only when a majority said yes
// within the lock's drift-corrected validity; a failed attempt is rolled back on every node. The
// lock stays correct while a minority of nodes is down, slow or partitioned away.
//
// The guarantee rests on assumptions spelled out in the README: node clocks advance at rates
// that differ by less than the drift factor, a node that restarts does not come back without
// the keys it held (persistence with fsync, or a restart delayed beyond the longest TTL), and a
// holder stops using the lock when Until has passed.
package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// conn is what the algorithm needs of one Redis master. Process sends the commands of a Lock
// and its Unlock, whose arguments are boxed once for every node (see command.go): SET NX PX as
// a *redis.BoolCmd, EVALSHA as a *redis.Cmd. Other scripts go through Scripter.
type conn interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

var _ conn = redis.UniversalClient(nil)

// A Client locks keys across a fixed set of independent Redis masters. It is safe for
// concurrent use. It does not own the go-redis clients it was given: Close leaves them open.
type Client struct {
	nodes  []conn
	addrs  []string
	listen []conn // where releases are heard: the nodes, or NewCluster's one cluster
	tagged bool   // NewCluster's: every key on a node starts with that vote's hash tag
	// clusterNode is the first node that is a Redis Cluster (-1 for none), where one script
	// touches one hash slot. NewCluster's votes put every key of a vote in one slot themselves.
	clusterNode int
	quorum      int
	channel     string // where Unlock announces releases: the prefix + "redlock:released"
	announce    any    // channel, boxed once
	id          string // names the Client's waiters, and its own channel: channel + ":" + id
	waiters     atomic.Uint64
	wake        releases
	queue       turns
	options

	// mu orders Close after every call in progress, so that no goroutine is added to bg once
	// Close has started waiting for it.
	mu     sync.RWMutex
	closed bool
	done   chan struct{} // closed by Close: ends waits between retries
	bg     sync.WaitGroup
}

// New returns a Client over nodes, independent Redis masters (not replicas of one another);
// use an odd number, 3 or 5 usually. Each node's index in nodes names it in errors. A node may
// be a *redis.ClusterClient, a whole Redis Cluster that counts as one vote: every key a lock
// uses on it lives in the lock key's hash slot (see WithKeyPrefix). To vote with the masters of
// one cluster instead, use NewCluster.
//
// New checks everything and sends nothing: it fails on no nodes, a nil node, a node given
// twice, or an option out of range.
func New(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes")
	}
	c, err := newClient(len(nodes), opts)
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		if isNil(n) {
			return nil, fmt.Errorf("redlock: node %d is nil", i)
		}
		for j := range i {
			if same(nodes[j], n) {
				return nil, fmt.Errorf("redlock: node %d is the same client as node %d", i, j)
			}
		}
		c.nodes[i] = &batcher{node: n}
		switch n := n.(type) {
		case *redis.Client:
			c.addrs[i] = n.Options().Addr
		case *redis.ClusterClient:
			c.addrs[i] = strings.Join(n.Options().Addrs, ",")
			if c.clusterNode < 0 {
				c.clusterNode = i
			}
		}
	}
	c.listen = c.nodes
	return c, nil
}

// newClient returns a Client for n nodes, yet to be filled in, with opts applied.
func newClient(n int, opts []Option) (*Client, error) {
	c := &Client{
		nodes:       make([]conn, n),
		addrs:       make([]string, n),
		quorum:      quorum.Of(n),
		options:     defaultOptions(),
		done:        make(chan struct{}),
		clusterNode: -1,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("redlock: nil option")
		}
		if err := opt(&c.options); err != nil {
			return nil, err
		}
	}
	c.channel = c.prefix + "redlock:released"
	c.announce = c.channel
	c.id = newToken()
	c.wake.c = c
	return c, nil
}

func isNil(n redis.UniversalClient) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func same(a, b redis.UniversalClient) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer &&
		va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// Close stops waiting Lock calls (they return ErrClosed), ends the client's subscriptions and
// waits for the client's own goroutines: calls to nodes still in flight and their clean-up. A
// node call that its go-redis client does not bound by the context ends at the client's own
// read timeout. Close does not close the go-redis clients, and does not release held locks.
// Calling Close again does nothing.
func (c *Client) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	c.wake.close()
	c.bg.Wait()
	return nil
}

// check rejects what no attempt could do anything sensible with.
func (c *Client) check(key string, ttl time.Duration) error {
	if key == "" {
		return errors.New("redlock: empty key")
	}
	return c.checkTTL(ttl)
}

func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl%time.Millisecond != 0 {
		return fmt.Errorf("redlock: ttl %v is not a whole number of milliseconds (Redis expires keys in ms)", ttl)
	}
	if d := clock.Drift(ttl, c.driftFactor); ttl <= d {
		return fmt.Errorf("redlock: ttl %v must be larger than the clock drift allowance %v", ttl, d)
	}
	return nil
}

// enter registers a call in progress; leave must follow. It fails once the Client is closed.
func (c *Client) enter() error {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (c *Client) leave() { c.mu.RUnlock() }

// newToken returns 128 random bits from crypto/rand, base64url-encoded.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b[:])
}
