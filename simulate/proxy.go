package simulate

import (
	"context"
	"io"
	"net"
	"sync"
)

// A proxy is a link made of TCP, for the real backend: it listens on a free loopback port for
// one client and forwards each connection to the node through the link, so that the link's
// faults (cut, latency, lost replies) hit real sockets. A cut closes the client's connections;
// a node that is down or cut off accepts the connection and closes it at once, as a proxy in
// front of a dead server would.
type proxy struct {
	link *link
	ln   net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{} // client ends and node ends, closed with the proxy
	wg    sync.WaitGroup        // the accept loop and the copies
}

// listen starts a proxy for l and makes it l's way to the node.
func listen(l *link) (*proxy, error) {
	p := &proxy{link: l, conns: map[net.Conn]struct{}{}}
	ln, err := acceptLoop(&p.wg, p.forward)
	if err != nil {
		return nil, err
	}
	p.ln = ln
	l.mu.Lock()
	l.proxy = p
	l.mu.Unlock()
	return p, nil
}

// acceptLoop listens on a free loopback port and passes every connection it accepts to handle,
// in a goroutine counted in wg, until the listener it returns is closed.
func acceptLoop(wg *sync.WaitGroup, handle func(net.Conn)) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			handle(c)
		}
	})
	return ln, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// forward forwards c, a client's connection, to the node through the link.
func (p *proxy) forward(c net.Conn) {
	inner, _ := p.link.dial(context.Background(), "", "")
	if _, dead := inner.(brokenConn); dead || !p.track(c, inner) {
		c.Close()
		inner.Close()
		return
	}
	// Each direction closes both ends when it stops, which stops the other.
	p.wg.Go(func() { p.pipe(inner, c) })
	p.wg.Go(func() { p.pipe(c, inner) })
}

// track records both ends of a forwarded connection; false once the proxy is closing.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
	dst.Close()
	src.Close()
}

// close stops accepting, closes every forwarded connection and waits for the copies to end.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	open := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range open {
		c.Close()
	}
	p.wg.Wait()
}
