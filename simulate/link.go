package simulate

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

var errPartitioned = errors.New("simulate: no route to node (partitioned)")

// A link is one client's path to one node. The simulator cuts it (a partition), slows it
// (latency on every request, or a random delay on every reply) or loses the node's replies (to
// one command, or a random share of them); a command whose reply is lost still runs on the node,
// only its answer never arrives.
type link struct {
	node  *node
	proxy *proxy // on a TCP backend: where the client connects, set before the run starts

	mu      sync.Mutex
	cut     bool
	latency time.Duration
	drop    string // lower-case command name whose replies are lost, "" for none
	replies replyFault
	rng     *rand.Rand // draws the replies' delays and losses; nil until setReplies
	conns   map[*faultyConn]struct{}

	deafened atomic.Int64 // connections that lost a reply, and so every reply after it
}

// A replyFault is what a link does to every reply of its node (a gray failure): it holds each
// for a delay drawn uniformly from [Min, Max], and loses each with probability Loss. Replies
// keep their order, as on a TCP stream: one drawn shorter than the one before waits for it.
// A reply here is what the node sends at once, which for a request is its whole reply.
type replyFault struct {
	Min, Max time.Duration
	Loss     float64
}

func newLink(n *node) *link { return &link{node: n, conns: map[*faultyConn]struct{}{}} }

// dial fits go-redis's Options.Dialer. When the node is down or cut off, the dial succeeds
// and the connection fails at its first use: go-redis counts failed dials and, past its pool
// size, starts a background prober that would outlive the run.
//
// The node's dial runs without the link's lock: it may wait for the node's own lock, which a
// script holds while it publishes to a subscriber of this link, and that waits for the link's
// pump, which takes the link's lock for every reply.
func (l *link) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if cut, _, _ := l.state(); cut {
		return deadConn(errPartitioned), nil
	}
	inner, err := l.node.dial(ctx)
	if err != nil {
		return deadConn(err), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut { // cut meanwhile: the cut closed the connections open then, not this one
		inner.Close()
		return deadConn(errPartitioned), nil
	}
	c := &faultyConn{Conn: inner, link: l, closed: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	l.conns[c] = struct{}{}
	go c.pump()
	return c, nil
}

// setCut partitions the client from the node (true) or heals the partition. Connections open
// at the cut break.
func (l *link) setCut(cut bool) {
	l.mu.Lock()
	l.cut = cut
	var open []*faultyConn
	if cut {
		for c := range l.conns {
			open = append(open, c)
		}
	}
	l.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

func (l *link) setLatency(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latency = d
}

func (l *link) setDrop(cmd string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop = cmd
}

// setReplies makes every reply of the node from now on suffer f, drawn from rng (the link's
// own from then on: its draws do not depend on the other links').
func (l *link) setReplies(f replyFault, rng *rand.Rand) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replies, l.rng = f, rng
}

// heal ends the link's latency and reply faults and closes the connections open through it, as
// a run ends: a call waiting for a delayed or lost reply, or held by the latency, then fails at
// once. Inside a testing/synctest bubble it must: go-redis's PubSub.Close waits for a mutex
// that a Ping holds while it writes or reads, and a goroutine waiting for a mutex keeps virtual
// time from reaching the moment that would let the Ping go.
func (l *link) heal() {
	l.mu.Lock()
	l.replies, l.latency = replyFault{}, 0
	var open []*faultyConn
	for c := range l.conns {
		open = append(open, c)
	}
	l.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// reply draws what happens to the next reply: its delay, and whether it is lost.
func (l *link) reply() (delay time.Duration, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.replies
	if f.Max > 0 {
		delay = f.Min + time.Duration(l.rng.Int64N(int64(f.Max-f.Min)+1))
	}
	return delay, f.Loss > 0 && l.rng.Float64() < f.Loss
}

func (l *link) state() (cut bool, latency time.Duration, drop string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut, l.latency, l.drop
}

// A faultyConn is a client's end of an in-memory connection to a node, passing through its link.
type faultyConn struct {
	net.Conn
	link *link

	closed chan struct{} // closed by Close: ends a write waiting out the latency

	mu       sync.Mutex
	once     sync.Once
	done     bool // Close was called
	lose     int  // replies still to lose
	deafened bool // a reply was lost: everything after it is discarded too

	// The node's replies, read off the in-memory pipe as they come (pump). A TCP socket
	// buffers what its reader has not asked for yet; a pipe does not, and a node that pushes a
	// message (pub/sub) to a client busy elsewhere would block on it, holding its locks.
	cond     *sync.Cond // on mu: data, an error, a reply due or a deadline
	queue    []reply    // in order of arrival, and so of due time
	last     time.Time  // the due time of the last reply queued
	rerr     error
	deadline time.Time
	timer    *time.Timer
}

// A reply is what the node sent at once, passed on to the client from due.
type reply struct {
	due time.Time
	b   []byte
}

// pump copies the node's replies into the queue until the pipe fails or closes, each with
// the delay its link draws for it, or none of them from the first one the link loses.
func (c *faultyConn) pump() {
	b := make([]byte, 4096)
	for {
		n, err := c.Conn.Read(b)
		var delay time.Duration
		var lost bool
		if n > 0 {
			delay, lost = c.link.reply()
		}
		c.mu.Lock()
		// Once one is lost the stream is out of step, so the connection stays deaf until the
		// client gives up on it.
		if n > 0 && !c.deafened && (c.lose > 0 || lost) {
			c.deafened = true
			c.link.deafened.Add(1)
		}
		if n > 0 && !c.deafened {
			due := time.Now().Add(delay)
			if due.Before(c.last) {
				due = c.last
			}
			c.last = due
			c.queue = append(c.queue, reply{due: due, b: bytes.Clone(b[:n])})
		}
		if err != nil {
			c.rerr = err
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (c *faultyConn) Write(p []byte) (int, error) {
	cut, latency, drop := c.link.state()
	if cut {
		c.Close()
		return 0, errPartitioned
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-c.closed:
			t.Stop()
			return 0, net.ErrClosed
		}
	}
	if drop != "" && bytes.Contains(p, []byte("\r\n"+drop+"\r\n")) {
		c.mu.Lock()
		c.lose++
		c.mu.Unlock()
	}
	c.link.node.sync()
	return c.Conn.Write(p)
}

// Read passes the node's replies through once they are due, except the ones lost (see pump).
// It honours the read deadline as a socket would.
func (c *faultyConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.done {
			return 0, net.ErrClosed
		}
		now := time.Now()
		if len(c.queue) > 0 && !c.queue[0].due.After(now) {
			n := copy(p, c.queue[0].b)
			if c.queue[0].b = c.queue[0].b[n:]; len(c.queue[0].b) == 0 {
				c.queue = c.queue[1:]
			}
			return n, nil
		}
		if len(c.queue) == 0 && c.rerr != nil {
			return 0, c.rerr
		}
		if !c.deadline.IsZero() && !now.Before(c.deadline) {
			return 0, os.ErrDeadlineExceeded
		}
		if len(c.queue) == 0 {
			c.cond.Wait()
			continue
		}
		due := time.AfterFunc(c.queue[0].due.Sub(now), func() {
			c.mu.Lock()
			c.cond.Broadcast()
			c.mu.Unlock()
		})
		c.cond.Wait()
		due.Stop()
	}
}

func (c *faultyConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !t.IsZero() {
		c.timer = time.AfterFunc(time.Until(t), func() {
			c.mu.Lock()
			c.cond.Broadcast()
			c.mu.Unlock()
		})
	}
	c.cond.Broadcast()
	return nil
}

func (c *faultyConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *faultyConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	c.link.mu.Lock()
	delete(c.link.conns, c)
	c.link.mu.Unlock()
	c.mu.Lock()
	c.done = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	return c.Conn.Close() // the pump's Read fails, which wakes any Read here
}

// deadConn returns a connection that fails every read and write with err.
func deadConn(err error) net.Conn { return brokenConn{err} }

type brokenConn struct{ err error }

func (b brokenConn) Read([]byte) (int, error)         { return 0, b.err }
func (b brokenConn) Write([]byte) (int, error)        { return 0, b.err }
func (b brokenConn) Close() error                     { return nil }
func (b brokenConn) LocalAddr() net.Addr              { return pipeAddr{} }
func (b brokenConn) RemoteAddr() net.Addr             { return pipeAddr{} }
func (b brokenConn) SetDeadline(time.Time) error      { return nil }
func (b brokenConn) SetReadDeadline(time.Time) error  { return nil }
func (b brokenConn) SetWriteDeadline(time.Time) error { return nil }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
