package redlock

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// releases hears the releases that Unlock announces and wakes the Client's waiting Lock calls.
// It subscribes once per node, when the first waiter joins, and stays subscribed until Close:
// one subscription per node serves every waiter of the Client, whatever the key. A Client of
// NewCluster subscribes once to its cluster, which hears what every master publishes.
type releases struct {
	c *Client

	mu        sync.Mutex
	closed    bool
	subs      []*redis.PubSub // one per node; nil until the first waiter
	confirmed []bool
	count     int           // nodes that confirmed the subscription
	ready     chan struct{} // closed when a quorum of nodes (or the one cluster) confirmed it
	waiters   map[string]map[*waiter]struct{}
}

// A waiter is one Lock-like call waiting for a key (stored form) to be released, or any of
// several (LockAll). A mutex's attempts put it in the key's queue on the nodes, and a release
// names the waiter first in its node's queue: only that waiter is woken, so that the others do
// not all contend for the key at once. Other releases name nobody and wake every waiter.
type waiter struct {
	keys  []string
	id    string        // its name in the queue: the Client's id, a dot and a number
	score string        // its place in the queue: when it began waiting, in Unix microseconds
	wake  chan struct{} // one pending wake-up is enough
}

// newWaiter returns a waiter for what s acquires, placed in the queue as of now.
func (c *Client) newWaiter(s *spec) *waiter {
	id := c.id + "." + strconv.FormatUint(c.waiters.Add(1), 10)
	return &waiter{keys: s.wakeKeys(), id: id, score: strconv.FormatInt(c.clock.Now().UnixMicro(), 10), wake: make(chan struct{}, 1)}
}

// join registers w and returns a channel that is closed once releases will be heard from a
// quorum of nodes. It returns nil when the Client is closed.
func (r *releases) join(w *waiter) <-chan struct{} {
	c := r.c
	if c.enter() != nil {
		return nil
	}
	defer c.leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if r.subs == nil {
		r.subs = make([]*redis.PubSub, len(c.listen))
		r.confirmed = make([]bool, len(c.listen))
		r.ready = make(chan struct{})
		r.waiters = make(map[string]map[*waiter]struct{})
		for i, n := range c.listen {
			ps := n.Subscribe(context.Background()) // no channel yet: no I/O under the lock
			r.subs[i] = ps
			c.bg.Go(func() { r.receive(i, ps) })
		}
	}
	for _, k := range w.keys {
		if r.waiters[k] == nil {
			r.waiters[k] = make(map[*waiter]struct{})
		}
		r.waiters[k][w] = struct{}{}
	}
	return r.ready
}

func (r *releases) leave(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range w.keys {
		delete(r.waiters[k], w)
		if len(r.waiters[k]) == 0 {
			delete(r.waiters, k)
		}
	}
}

// receive subscribes node i and delivers what it hears until Close. go-redis reconnects and
// subscribes again after a broken connection.
func (r *releases) receive(i int, ps *redis.PubSub) {
	c := r.c
	ctx := context.Background()
	if err := ps.Subscribe(ctx, c.channel, c.channel+":"+c.id); err != nil {
		c.log.Debug("redlock: subscribe failed; retrying", "node", i, "err", err)
	}
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if r.isClosed() {
				return
			}
			t := c.clock.NewTimer(c.retryMax)
			select {
			case <-t.C:
			case <-c.done:
				t.Stop()
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				r.confirm(i)
			}
		case *redis.Message:
			r.notify(m.Payload)
		}
	}
}

func (r *releases) confirm(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.confirmed[i] {
		r.confirmed[i] = true
		r.count++
		if r.count == min(r.c.quorum, len(r.c.listen)) {
			close(r.ready)
		}
	}
}

// notify wakes the waiters for a released key. A message from a node is the key, a newline and
// the waiter the node named (see release.lua): only that one is woken, unless nobody is named.
func (r *releases) notify(msg string) {
	key, next := msg, ""
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		key, next = msg[:i], msg[i+1:]
	}
	if r.c.tagged { // "{tag}" + the stored key, as the vote stored it
		key = key[strings.IndexByte(key, '}')+1:]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.waiters[key] {
		if next != "" && w.id != next {
			continue
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (r *releases) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// close ends the subscriptions; their goroutines return once Receive fails.
func (r *releases) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, ps := range r.subs {
		ps.Close()
	}
}
