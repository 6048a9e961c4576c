package redlock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

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
	names     map[string]*waiter // the waiters by their names
}

// A waiter is one Lock-like call waiting for a key (stored form) to be released, or any of
// several (LockAll). A mutex's attempts put it in the key's queue on the nodes, and a release
// names the waiter first in its node's queue: only that waiter is woken, so that the others do
// not all contend for the key at once. Other releases name nobody and wake every waiter.
//
// A mutex's waiter on nodes that are not Redis Clusters takes hand-overs: its name carries its
// ttl, and a release sets the key to that name on its node rather than delete it (release.lua).
// The waiter holds the lock once a quorum of nodes announced that they handed it the key, with
// no attempt of its own. Its name changes with every attempt after its first, so that what a
// node announced to an older name is never counted: that attempt takes over what was handed to
// the previous name, or rolls it back.
type waiter struct {
	keys  []string
	score string          // its place in the queue: when it began waiting, in Unix microseconds
	ttl   string          // in ms, for a waiter that takes hand-overs; else ""
	wake  chan struct{}   // one pending wake-up is enough
	ready <-chan struct{} // set by join: closed once releases are heard

	// Guarded by the Client's releases.mu once joined.
	id     string    // its name in the queue: the Client's id, a dot, a number[, a dot, ttl]
	sent   bool      // id went out in an attempt
	since  time.Time // when that attempt began: a node handed the key to id after it
	handed []bool    // the nodes that announced handing the key to id
	freed  bool      // woken since handed last looked by a release that handed nothing over
}

// newWaiter returns a waiter for what s acquires for ttl, placed in the queue as of now.
func (c *Client) newWaiter(s *spec, ttl time.Duration) *waiter {
	w := &waiter{keys: s.wakeKeys(), score: strconv.FormatInt(c.clock.Now().UnixMicro(), 10), wake: make(chan struct{}, 1)}
	if s.kind == mutexKind && c.handsOver() {
		w.ttl = strconv.FormatInt(ttl.Milliseconds(), 10)
		w.handed = make([]bool, len(c.nodes))
	}
	w.id = c.waiterName(w)
	return w
}

// handsOver reports whether releases hand the key over to this Client's waiters: not on Redis
// Cluster nodes, where a node cannot tell whether a Client listens (PUBLISH counts only the
// node's own subscribers), and where a script that touches the queue during a slot migration
// may be refused.
func (c *Client) handsOver() bool { return c.clusterNode < 0 && !c.tagged }

// waiterName returns a new name for w.
func (c *Client) waiterName(w *waiter) string {
	id := c.id + "." + strconv.FormatUint(c.waiters.Add(1), 10)
	if w.ttl != "" {
		id += "." + w.ttl
	}
	return id
}

// sending returns the name w's attempt beginning now sends, and the previous name it replaces
// ("" for none): a waiter that takes hand-overs takes a new name for each attempt after its
// first, and forgets what was handed to the old one.
func (r *releases) sending(w *waiter, now time.Time) (name, prev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.sent && w.ttl == "" {
		return w.id, ""
	}
	if w.sent {
		prev = w.id
		r.renameLocked(w)
		clear(w.handed)
	}
	w.sent, w.since = true, now
	return w.id, prev
}

// renameLocked gives w a new name. r.mu is held.
func (r *releases) renameLocked(w *waiter) {
	delete(r.names, w.id)
	w.id = r.c.waiterName(w)
	r.names[w.id] = w
}

// wakeOnly makes w a waiter that takes no hand-overs, before it sent its name: one whose
// Client holds the key already is woken by that Client's Unlock and tries again (see wait).
func (r *releases) wakeOnly(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.ttl == "" || w.sent {
		return
	}
	w.ttl, w.handed = "", nil
	r.renameLocked(w)
}

// handed returns w's name, when the attempt that sent it began, how many nodes announced
// handing the key to it, and whether a release that handed nothing over woke it since the
// last call.
func (r *releases) handed(w *waiter) (name string, since time.Time, count int, freed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range w.handed {
		if h {
			count++
		}
	}
	freed, w.freed = w.freed, false
	return w.id, w.since, count, freed
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
		r.names = make(map[string]*waiter)
		for i, n := range c.listen {
			ps := n.Subscribe(context.Background()) // no channel yet: no I/O under the lock
			r.subs[i] = ps
			c.bg.Go(func() { r.receive(i, ps) })
		}
	}
	r.names[w.id] = w
	for _, k := range w.keys {
		if r.waiters[k] == nil {
			r.waiters[k] = make(map[*waiter]struct{})
		}
		r.waiters[k][w] = struct{}{}
	}
	w.ready = r.ready
	return r.ready
}

func (r *releases) leave(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, w.id)
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
			r.notify(i, m.Payload)
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

// notify wakes the waiters for a released key. A message from node i (the releases list index;
// -1 for the Client's own Unlock) is the key, a newline and the waiter the node named (see
// release.lua): only that one is woken, unless nobody is named. A message that ends in a
// newline and "handed" tells that node i handed the key to the waiter named.
func (r *releases) notify(i int, msg string) {
	msg, handed := strings.CutSuffix(msg, "\nhanded")
	key, next := msg, ""
	if j := strings.LastIndexByte(msg, '\n'); j >= 0 {
		key, next = msg[:j], msg[j+1:]
	}
	if r.c.tagged { // "{tag}" + the stored key, as the vote stored it
		key = key[strings.IndexByte(key, '}')+1:]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if next != "" {
		w := r.names[next]
		if w == nil {
			return
		}
		if handed && w.ttl != "" && i >= 0 {
			w.handed[i] = true
		} else {
			w.freed = true
		}
		wakeUp(w)
		return
	}
	for w := range r.waiters[key] {
		w.freed = true
		wakeUp(w)
	}
}

func wakeUp(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
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
