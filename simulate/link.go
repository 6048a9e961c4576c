package simulate

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

var errPartitioned = errors.New("simulate: no route to node (partitioned)")

// A link is one client's path to one node. The simulator cuts it (a partition), slows it
// (latency on every request) or loses the node's replies to one command; the command still runs
// on the node, only its answer never arrives.
type link struct {
	node  *node
	proxy *proxy // on a TCP backend: where the client connects, set before the run starts

	mu      sync.Mutex
	cut     bool
	latency time.Duration
	drop    string // lower-case command name whose replies are lost, "" for none
	conns   map[*faultyConn]struct{}
}

func newLink(n *node) *link { return &link{node: n, conns: map[*faultyConn]struct{}{}} }

// dial fits go-redis's Options.Dialer. When the node is down or cut off, the dial succeeds
// and the connection fails at its first use: go-redis counts failed dials and, past its pool
// size, starts a background prober that would outlive the run.
func (l *link) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return deadConn(errPartitioned), nil
	}
	inner, err := l.node.dial(ctx)
	if err != nil {
		return deadConn(err), nil
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
	lose     int  // replies still to lose
	deafened bool // a reply was lost: everything after it is discarded too

	// The node's replies, read off the in-memory pipe as they come (pump). A TCP socket
	// buffers what its reader has not asked for yet; a pipe does not, and a node that pushes a
	// message (pub/sub) to a client busy elsewhere would block on it, holding its locks.
	cond     *sync.Cond // on mu: data, an error or a deadline
	buf      bytes.Buffer
	rerr     error
	deadline time.Time
	timer    *time.Timer
}

// pump copies the node's replies into buf until the pipe fails or closes.
func (c *faultyConn) pump() {
	b := make([]byte, 4096)
	for {
		n, err := c.Conn.Read(b)
		c.mu.Lock()
		c.buf.Write(b[:n])
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

// Read passes the node's replies through, except the ones to lose: once one is lost, the
// stream is out of step, so the connection stays deaf until the client gives up on it. It
// honours the read deadline as a socket would.
func (c *faultyConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.buf.Len() > 0 {
			if c.lose > 0 {
				c.deafened = true
			}
			if !c.deafened {
				return c.buf.Read(p)
			}
			c.buf.Reset()
		}
		if c.rerr != nil {
			return 0, c.rerr
		}
		if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
			return 0, os.ErrDeadlineExceeded
		}
		c.cond.Wait()
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
	if c.timer != nil {
		c.timer.Stop()
	}
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
