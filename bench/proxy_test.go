package bench

import (
	"net"
	"sync"
	"time"
)

// A delayProxy listens on a loopback port and forwards every connection to one target,
// holding the bytes of each direction for delay before passing them on, in the order they
// came. It keeps a bounded number of buffers per direction, so a stalled reader slows the
// writer down instead of growing memory. Close stops every goroutine it started.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

const (
	proxyBuffers = 32       // in flight per direction of one connection
	proxyBufSize = 16 << 10 // bytes per buffer
)

func startDelayProxy(target string, delay time.Duration) (*delayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, cuts every connection and waits for the proxy's goroutines.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track registers c to be closed by Close; it reports false (and closes c) once closed.
func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *delayProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		if !p.track(client) {
			return
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// serve pumps one connection both ways until either side ends, then closes both.
func (p *delayProxy) serve(client net.Conn) {
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(done)
			client.Close()
			server.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(server, client, done, stop) })
	wg.Go(func() { p.pipe(client, server, done, stop) })
	wg.Wait()
}

type chunk struct {
	buf []byte
	due time.Time
}

// pipe copies src to dst, each read delivered delay after it was read. A reader goroutine
// stamps chunks; this goroutine writes them when due. Both end when done closes or either
// side fails, and stop is called on the way out.
func (p *delayProxy) pipe(dst, src net.Conn, done chan struct{}, stop func()) {
	free := make(chan []byte, proxyBuffers)
	for range proxyBuffers {
		free <- make([]byte, proxyBufSize)
	}
	queue := make(chan chunk, proxyBuffers)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() {
		defer close(queue)
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-done:
				return
			}
			n, err := src.Read(buf[:cap(buf)])
			if n > 0 {
				queue <- chunk{buf: buf[:n], due: time.Now().Add(p.delay)} // never blocks: one slot a buffer
			}
			if err != nil {
				stop()
				return
			}
		}
	})
	timer := time.NewTimer(time.Hour)
	timer.Stop() // since Go 1.23 a stopped timer delivers nothing stale after Reset
	for c := range queue {
		if d := time.Until(c.due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-done:
				continue // drain the queue so the reader can end
			}
		}
		select {
		case <-done:
			continue
		default:
		}
		if _, err := dst.Write(c.buf); err != nil {
			stop()
		}
		free <- c.buf
	}
}
