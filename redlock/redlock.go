// Package redlock is a distributed lock over N independent Redis masters (the Redlock
// algorithm). An acquisition asks every node at once and succeeds only when a majority said yes
// within the lock's drift-corrected validity; a failed attempt is rolled back on every node. The
// lock stays correct while a minority of nodes is down, slow or partitioned away.
//
// The guarantee rests on assumptions spelled out in docs/locks.md: node clocks advance at rates
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/internal/workers"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
	"github.com/quorumlock/redlock/redlock/locktrace"
)

// A Client locks keys across a fixed set of independent Redis masters. It is safe for
// concurrent use. It does not own the clients its nodes wrap: Close leaves them open.
type Client struct {
	nodes  []driver.Node
	addrs  []string
	quorum int
	opts   options
	self   identity
	recent recent // keys this Client waited for lately
	// listener hears releases and wakes waiters: on the nodes, or NewCluster's one cluster.
	listener *listener
	// clusterNode is the first node that is a Redis Cluster (-1 for none), where one script
	// touches one hash slot. NewCluster's votes put every key of a vote in one slot themselves.
	clusterNode int
	held        holdings // what Close releases
	life        lifecycle
}

// An identity is what names a Client's waiters and announcements.
type identity struct {
	id      string // names the Client's waiters, and its own channel
	channel string // where releases are announced to every Client
	waiters atomic.Uint64
}

// holdings are the locks a Client holds, for Close to release.
type holdings struct {
	mu    sync.Mutex
	locks map[*Lock]struct{}
	swept int // how many were held after the last look at them all
}

// A lifecycle is a Client's life: the calls in progress, and its background work.
type lifecycle struct {
	// mu orders Close after every call in progress, so that no goroutine is added to bg once
	// Close has started waiting for it.
	mu     sync.RWMutex
	closed bool
	// done is closed when Close begins: it ends waits, and the rounds a closing Client need
	// not finish (attempts, reads) stop at it. It carries time so that a round's decision,
	// which stops at a timer, can stop at it.
	done     chan time.Time
	shutdown sync.Once
	// ctx is the Client's background work's: Close cancels listening at once, and ctx once
	// the replies in flight had their time.
	ctx, listening          context.Context
	cancel, cancelListening context.CancelFunc
	bg                      sync.WaitGroup
	// calls runs the calls to the nodes, on goroutines it keeps for the next round: Close
	// does not wait for a call that its node has not answered (see round.ask).
	calls *workers.Pool
}

// New returns a Client over nodes, independent Redis masters (not replicas of one another);
// use an odd number, 3 or 5 usually. Each node's index in nodes names it in errors. A node may
// be a *redis.ClusterClient, a whole Redis Cluster that counts as one vote: every key a lock
// uses on it lives in the lock key's hash slot (see WithKeyPrefix). To vote with the masters of
// one cluster instead, use NewCluster.
//
// The Client sends each command once (go-redis does not retry it) and waits for a node at most
// the node timeout (WithNodeTimeout); a call that go-redis has not ended by then is abandoned
// and ends by the go-redis client's own timeouts.
//
// New checks everything and sends nothing: it fails on no nodes, a nil node, a node given
// twice, or an option out of range. It is NewNodes over goredisnode.New of each node.
func New(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	ns := make([]driver.Node, len(nodes))
	cluster := -1
	for i, n := range nodes {
		ns[i] = goredisnode.New(n)
		if _, ok := n.(*redis.ClusterClient); ok && cluster < 0 {
			cluster = i
		}
	}
	c, err := NewNodes(ns, opts...)
	if err == nil {
		c.clusterNode = cluster
	}
	return c, err
}

// NewNodes returns a Client over nodes of any kind (see driver.Node), as New does for go-redis
// clients; nodes of different kinds mix (goredisnode.New makes a go-redis client one). A node
// that has a String method is named by it in errors. NewNodes fails on no nodes, a nil node, a
// node given twice (the same Node, or two nodes of one address), or an option out of range.
func NewNodes(nodes []driver.Node, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes")
	}
	o, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	ns := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		if isNil(n) {
			return nil, fmt.Errorf("redlock: node %d is nil", i)
		}
		for j := range i {
			if err := twice(nodes[j], n, j, i); err != nil {
				return nil, err
			}
		}
		ns[i] = n
		if t, ok := n.(driver.Tuned); ok {
			ns[i] = t.ForClient(o.nodeTimeout)
		}
	}
	return newClient(ns, o), nil
}

// twice returns the error for node i being node j again: the same Node, or a node of the same
// address (two clients of one server, which would count it twice).
func twice(a, b driver.Node, j, i int) error {
	if same(a, b) {
		return fmt.Errorf("redlock: node %d is the same node as node %d", i, j)
	}
	sa, okA := a.(fmt.Stringer)
	sb, okB := b.(fmt.Stringer)
	if okA && okB && sa.String() != "" && sa.String() == sb.String() {
		return fmt.Errorf("redlock: node %d has the same address as node %d, %s: one server would count twice", i, j, sa.String())
	}
	return nil
}

// newClient returns a Client over nodes with options o.
func newClient(nodes []driver.Node, o options) *Client {
	c := &Client{
		nodes:       nodes,
		addrs:       make([]string, len(nodes)),
		quorum:      quorum.Of(len(nodes)),
		opts:        o,
		clusterNode: -1,
		held:        holdings{locks: make(map[*Lock]struct{})},
		life:        lifecycle{done: make(chan time.Time), calls: workers.New()},
	}
	c.self.id, c.self.channel = newToken(), o.names.Channel()
	c.life.ctx, c.life.cancel = context.WithCancel(context.Background())
	c.life.listening, c.life.cancelListening = context.WithCancel(c.life.ctx)
	c.listener = newListener(c, nodes)
	for i, n := range nodes {
		if s, ok := n.(fmt.Stringer); ok {
			c.addrs[i] = s.String()
		}
		if s, ok := n.(driver.Clustered); ok && s.Clustered() {
			c.opts.leased = true
		}
	}
	return c
}

func isNil(n any) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer &&
		va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// Close releases every lock the Client holds (its Lost channels close, and Do's functions see
// their context cancelled), ends waiting Lock calls (they return ErrClosed, and give up their
// places in line so that other processes' waiters are served at once) and the Client's
// subscriptions, and waits for the Client's goroutines. It returns within about twice the node
// timeout, whatever the nodes do: attempts and reads in progress stop at once, other calls
// within the node timeout, the releases take at most the node timeout, and calls to a node
// that did not answer by the end are abandoned, to end inside go-redis by its client's own
// timeouts (its ReadTimeout). A lock whose release reached no quorum expires with its ttl.
// Close does not close the clients the nodes wrap. Calling Close again does nothing.
func (c *Client) Close() error {
	start := time.Now()
	first := false
	c.life.shutdown.Do(func() { first = true; close(c.life.done) })
	if !first {
		return nil
	}
	c.life.mu.Lock() // once the calls in progress have left
	c.life.closed = true
	waiting := c.listener.waiting()
	c.life.mu.Unlock()
	c.held.mu.Lock()
	held := make([]*Lock, 0, len(c.held.locks))
	for l := range c.held.locks {
		held = append(held, l)
	}
	c.held.mu.Unlock()
	c.life.cancelListening()
	var releases sync.WaitGroup
	for _, w := range waiting {
		releases.Go(func() { c.abandon(context.Background(), w) })
	}
	for _, l := range held {
		releases.Go(func() {
			ctx, call := c.begin(context.Background(), locktrace.OpUnlock, l.spec)
			c.end(ctx, call, l.release(ctx, ErrClosed))
		})
	}
	releases.Wait()
	// What is left of twice the node timeout is for the replies in flight, and what they call
	// for (the roll-back of an attempt that Close stopped, say).
	idle := c.idle()
	t := time.NewTimer(max(satMul(c.opts.nodeTimeout, 2)-time.Since(start), 0))
	select {
	case <-idle:
	case <-t.C:
	}
	t.Stop()
	c.life.cancel()
	<-idle
	c.life.calls.Close()
	return nil
}

// NodeTimeout returns how long the Client waits for a node's reply (WithNodeTimeout): what an
// integration sizes its own deadlines by.
func (c *Client) NodeTimeout() time.Duration { return c.opts.nodeTimeout }

// idle returns a channel that is closed once the Client's goroutines have all ended.
func (c *Client) idle() <-chan struct{} {
	idle := make(chan struct{})
	go func() {
		c.life.bg.Wait()
		close(idle)
	}()
	return idle
}

// enter registers a call in progress; leave must follow. It fails once the Client is closed.
func (c *Client) enter() error {
	c.life.mu.RLock()
	if c.life.closed {
		c.life.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (c *Client) leave() { c.life.mu.RUnlock() }

// track remembers l as held, for Close to release; untrack forgets it. A lock left to expire
// without Unlock ends when something looks at it; so that such locks do not pile up, track
// looks at them all whenever the held ones have doubled since it last did.
func (c *Client) track(l *Lock) {
	c.held.mu.Lock()
	c.held.locks[l] = struct{}{}
	var all []*Lock
	if n := len(c.held.locks); n >= 64 && n >= 2*c.held.swept {
		all = make([]*Lock, 0, n)
		for h := range c.held.locks {
			all = append(all, h)
		}
	}
	c.held.mu.Unlock()
	if all == nil {
		return
	}
	now := c.opts.clock.Now()
	for _, h := range all {
		h.endedAt(now) // ends (and untracks) an expired lock
	}
	c.held.mu.Lock()
	c.held.swept = len(c.held.locks)
	c.held.mu.Unlock()
}

func (c *Client) untrack(l *Lock) {
	c.held.mu.Lock()
	delete(c.held.locks, l)
	c.held.mu.Unlock()
}

// check rejects what no attempt of s for ttl could do anything sensible with.
func (c *Client) check(s *spec, ttl time.Duration) error {
	if err := c.checkKey(s.key); err != nil {
		return err
	}
	return c.checkTTL(ttl)
}

// checkKey rejects what no lock may be named.
func (c *Client) checkKey(key string) error {
	if err := wire.CheckKey(key); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// checkTTL rejects a ttl no lock may have.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redlock: ttl %v must be positive", ttl)
	}
	if ttl%time.Millisecond != 0 {
		return fmt.Errorf("redlock: ttl %v is not a whole number of milliseconds (Redis expires keys in ms)", ttl)
	}
	if d := clock.Drift(ttl, c.opts.driftFactor); ttl <= d {
		return fmt.Errorf("redlock: ttl %v must be larger than the clock drift allowance %v", ttl, d)
	}
	return nil
}

// newToken returns 128 random bits from crypto/rand, base64url-encoded.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b[:])
}
