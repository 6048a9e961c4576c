package redlock

import (
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock/driver"
)

// A listener hears the releases that the nodes announce and wakes the Client's waiting calls.
// It subscribes once per node, when the first waiter joins, and stays subscribed until Close:
// one subscription per node serves every waiter of the Client, whatever the key. A Client of
// NewCluster listens once, to its cluster, which hears what every master publishes.
//
// A message only wakes a waiter, which then makes an attempt of its own: whoever can publish
// on the channels can make waiters try, but never make one a holder.
type listener struct {
	c     *Client
	nodes []driver.Node // where it listens: the Client's nodes, or NewCluster's one cluster

	mu      sync.Mutex
	started bool
	ready   chan struct{} // closed once a quorum of nodes (or the one cluster) subscribed
	count   int           // nodes that subscribed
	joined  []bool        // which
	byName  map[string]*waiter
	byKey   map[string]map[*waiter]struct{}
}

// A waiter is one waiting call, woken by the releases of the names in keys: by name when a
// release names it, or with every other waiter of the key when it names nobody.
type waiter struct {
	name string
	keys []string
	wake chan struct{} // one pending wake-up is enough
	// from are the nodes whose releases woke it since its last attempt (the listen nodes' by
	// index), under the listener's lock: its next attempt waits for a quorum of them, so that
	// it does not reach a node before the release it heard of from another node.
	from []bool
	// abandon undoes what its attempts left on the nodes for others, when it gives up (ok).
	abandon command
	ok      bool
}

func newListener(c *Client, nodes []driver.Node) *listener {
	return &listener{
		c:      c,
		nodes:  nodes,
		ready:  make(chan struct{}),
		joined: make([]bool, len(nodes)),
		byName: make(map[string]*waiter),
		byKey:  make(map[string]map[*waiter]struct{}),
	}
}

// join registers a waiter for s under a new name and returns it with a channel that is
// closed once releases are heard. The caller is within enter and leave.
func (l *listener) join(s *spec) (*waiter, <-chan struct{}) {
	w := l.newWaiter(s.wake)
	w.abandon, w.ok = s.ops.abandon(w.name, l.c.self.channel)
	return w, l.add(w)
}

// watch registers a waiter that is woken by every announced release of key, but never named
// (it takes no place in a line, and has nothing to abandon), and returns it with the channel
// of join.
func (l *listener) watch(key string) (*waiter, <-chan struct{}) {
	w := l.newWaiter([]string{key})
	return w, l.add(w)
}

// newWaiter returns a waiter of a new name, woken by the releases of keys.
func (l *listener) newWaiter(keys []string) *waiter {
	c := l.c
	return &waiter{
		name: wire.Waiter{Client: c.self.id, N: c.self.waiters.Add(1)}.String(),
		keys: keys,
		wake: make(chan struct{}, 1),
		from: make([]bool, len(l.nodes)),
	}
}

// add registers w, subscribing to the nodes if nobody did yet, and returns the channel that is
// closed once releases are heard.
func (l *listener) add(w *waiter) <-chan struct{} {
	c := l.c
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started = true
		for i := range l.nodes {
			c.life.bg.Go(func() { l.subscribe(i) })
		}
	}
	l.byName[w.name] = w
	for _, k := range w.keys {
		if l.byKey[k] == nil {
			l.byKey[k] = make(map[*waiter]struct{})
		}
		l.byKey[k][w] = struct{}{}
	}
	return l.ready
}

func (l *listener) leave(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byName, w.name)
	for _, k := range w.keys {
		delete(l.byKey[k], w)
		if len(l.byKey[k]) == 0 {
			delete(l.byKey, k)
		}
	}
}

// subscribe listens to node i until Close, subscribing again after a failure.
func (l *listener) subscribe(i int) {
	c := l.c
	channels := []string{c.self.channel, c.opts.names.ClientChannel(c.self.id)}
	for {
		err := l.nodes[i].Listen(c.life.listening, channels, func() { l.subscribed(i) }, func(_, payload string) { l.deliver(i, payload) })
		if c.life.listening.Err() != nil {
			return
		}
		c.opts.log.Debug("redlock: subscription failed; subscribing again", "node", i, "err", err)
		t := c.opts.clock.NewTimer(min(max(c.opts.retryMax, 10*time.Millisecond), time.Second))
		select {
		case <-t.C:
		case <-c.life.listening.Done():
			t.Stop()
			return
		}
	}
}

func (l *listener) subscribed(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.joined[i] {
		return
	}
	l.joined[i] = true
	if l.count++; l.count == min(l.c.quorum, len(l.joined)) {
		close(l.ready)
	}
}

// deliver wakes the waiters that a release on node i names (see wire.Announcement).
func (l *listener) deliver(i int, payload string) {
	a, ok := wire.ParseAnnouncement(payload)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Waiter != "" {
		if w := l.byName[a.Waiter]; w != nil {
			w.from[i] = true
			wakeUp(w)
		}
		return
	}
	for w := range l.byKey[a.Key] {
		w.from[i] = true
		wakeUp(w)
	}
}

// heard returns how many nodes woke w since its last attempt.
func (l *listener) heard(w *waiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, h := range w.from {
		if h {
			n++
		}
	}
	return n
}

// forget makes w's next wake-ups count from now: its attempt begins.
func (l *listener) forget(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(w.from)
}

// waiting returns the waiters registered now.
func (l *listener) waiting() []*waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := make([]*waiter, 0, len(l.byName))
	for _, w := range l.byName {
		ws = append(ws, w)
	}
	return ws
}

func wakeUp(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
