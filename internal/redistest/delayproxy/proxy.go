// Package delayproxy is a TCP proxy for tests and benchmarks that puts a node at a distance:
// it delays the bytes of each direction, and can lose a direction's RESP values, as a slow or
// lossy network path does.
package delayproxy

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A Proxy listens on a loopback port and forwards every connection to one target,
// holding the bytes of each direction for a delay before passing them on, in the order they
// came, and optionally losing the replies of some commands (see Fault). It keeps a bounded
// number of buffers per direction, so a stalled reader slows the writer down instead of
// growing memory. Close stops every goroutine it started.
type Proxy struct {
	ln     net.Listener
	target string
	cfg    Config
	seq    uint64 // connections accepted, numbering their random streams; accept's own

	stalls   atomic.Int64 // directions that lost a value and deliver nothing since
	unframed atomic.Int64 // directions that lose nothing because their bytes were not RESP
	healed   atomic.Bool  // faults are over (see Heal)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// A Config says what the proxy does to each direction of every connection.
type Config struct {
	Requests Fault // client to node
	Replies  Fault // node to client
	// Seed seeds the random delays and losses, each from a stream of its own so that where
	// values are lost does not depend on how the bytes came in chunks: connection i (in the
	// order accepted) draws the delays of direction d (0 requests, 1 replies) from
	// PCG(seed, 4i+2d) and its losses from PCG(seed, 4i+2d+1).
	Seed uint64
}

// A Fault is what the proxy does to the bytes of one direction.
//
// Each chunk (what one read of the source returned: a reply, or a pipeline's replies, when
// the client waits for them) is held for a delay drawn uniformly from [MinDelay, MaxDelay].
// Chunks keep their order, as TCP's bytes do, so a chunk whose delay is shorter than the
// one before it waits for that one.
//
// With Drop > 0 the direction is read as RESP, and each whole value (a reply, or a pub/sub
// message) is lost with probability Drop; from then on nothing more of that direction is
// delivered, while the connection stays open and the other direction still passes. A lost
// value rather than lost bytes: bytes cut out of a RESP stream leave the client a stream it
// cannot parse (a protocol error, which go-redis answers at once by closing the connection:
// a clean failure, not a gray one) or, when the cut falls on value boundaries, a stream
// whose later replies it takes for the answers to earlier commands, which no network does.
// Nothing after it, because a TCP stream cannot skip a hole: a path that loses bytes for
// good delivers nothing behind them, and a go-redis client matches replies to commands by
// their order alone (pipelines included). For a command this is a lost reply: go-redis
// waits out its read timeout (3 s by default), then discards the connection and dials
// another. A pub/sub connection stays silent until its client notices.
type Fault struct {
	MinDelay, MaxDelay time.Duration
	Drop               float64
}

// delay draws one chunk's delay.
func (f Fault) delay(rng *rand.Rand) time.Duration {
	if f.MaxDelay <= f.MinDelay {
		return f.MinDelay
	}
	return f.MinDelay + time.Duration(rng.Int64N(int64(f.MaxDelay-f.MinDelay)+1))
}

const (
	proxyBuffers = 32       // in flight per direction of one connection
	proxyBufSize = 16 << 10 // bytes per buffer
)

// StartDelay starts a proxy that holds the bytes of both directions for delay.
func StartDelay(target string, delay time.Duration) (*Proxy, error) {
	each := Fault{MinDelay: delay, MaxDelay: delay}
	return Start(target, Config{Requests: each, Replies: each})
}

// Start starts a proxy to target that does to the bytes what cfg says; Close stops it.
func Start(target string, cfg Config) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, cfg: cfg, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is where the proxy listens: connect to it instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stalls counts the directions that lost a value and have delivered nothing since.
func (p *Proxy) Stalls() int64 { return p.stalls.Load() }

// Unframed counts the directions that lose nothing because their bytes were not RESP.
func (p *Proxy) Unframed() int64 { return p.unframed.Load() }

// Close stops accepting, cuts every connection and waits for the proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// Heal ends the faults: from now on every direction passes its bytes at once, and every
// connection open now is closed (a stalled one cannot recover the bytes it lost), so that
// calls waiting on it fail and go-redis dials again. The proxy goes on accepting.
func (p *Proxy) Heal() {
	p.healed.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// track registers c to be closed by Close; it reports false (and closes c) once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		if !p.track(client) {
			return
		}
		requests, replies := p.direction(p.cfg.Requests, p.seq, 0), p.direction(p.cfg.Replies, p.seq, 1)
		p.seq++
		p.wg.Go(func() { p.serve(client, requests, replies) })
	}
}

// A direction is one way through a connection: what it does to the bytes, and its random
// streams (see Config.seed).
type direction struct {
	Fault
	delays *rand.Rand
	lose   *loss // nil when the fault loses nothing
}

// direction returns direction d (0 requests, 1 replies) of connection i.
func (p *Proxy) direction(f Fault, i, d uint64) direction {
	dir := direction{Fault: f, delays: rand.New(rand.NewPCG(p.cfg.Seed, 4*i+2*d))}
	if f.Drop > 0 {
		dir.lose = &loss{p: f.Drop, rng: rand.New(rand.NewPCG(p.cfg.Seed, 4*i+2*d+1))}
	}
	return dir
}

// serve pumps one connection both ways until either side ends, then closes both.
func (p *Proxy) serve(client net.Conn, requests, replies direction) {
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
	wg.Go(func() { p.pipe(server, client, requests, done, stop) })
	wg.Go(func() { p.pipe(client, server, replies, done, stop) })
	wg.Wait()
}

type chunk struct {
	buf []byte
	due time.Time
}

// pipe copies src to dst as dir says, each read delivered the delay it drew after it was
// read, less what dir loses. A reader goroutine stamps chunks; this goroutine writes them
// when due. Both end when done closes or either side fails, and stop is called on the way out.
func (p *Proxy) pipe(dst, src net.Conn, dir direction, done chan struct{}, stop func()) {
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
			kept, due := buf[:n], time.Now()
			if !p.healed.Load() {
				if dir.lose != nil {
					kept = p.keep(dir.lose, kept)
				}
				due = due.Add(dir.delay(dir.delays))
			}
			if len(kept) > 0 {
				queue <- chunk{buf: kept, due: due} // never blocks: one slot a buffer
			} else {
				free <- buf
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

// keep passes b through l and counts what happened to its direction.
func (p *Proxy) keep(l *loss, b []byte) []byte {
	stalled, broken := l.stalled, l.broken
	b = l.keep(b)
	if l.stalled && !stalled {
		p.stalls.Add(1)
	}
	if l.broken && !broken {
		p.unframed.Add(1)
	}
	return b
}
