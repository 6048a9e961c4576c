package delayproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The delay proxy delays each direction by its delay, keeps the order of the bytes, and
// stops every goroutine it started on Close. Needs no Redis: the target is an echo server.
func TestDelayProxy(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { io.Copy(c, c); c.Close() })
		}
	})

	const delay = 10 * time.Millisecond
	p, err := StartDelay(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	const lines = 20
	start := time.Now()
	for i := range lines { // all at once: the delays overlap, the order must hold
		fmt.Fprintf(c, "line %d\n", i)
	}
	for i := range lines {
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("line %d\n", i); got != want {
			t.Fatalf("read %q, want %q", got, want)
		}
		if i == 0 {
			if rtt := time.Since(start); rtt < 2*delay {
				t.Fatalf("first round trip took %v, want at least %v", rtt, 2*delay)
			}
		}
	}
	c.Close()
	p.Close() // Close cuts the proxied connections; the deferred call is then a no-op
}

// A proxy with a lossy reply direction delivers a run of whole replies, then nothing, while
// the connection stays open and requests still reach the target. Where the replies stop is
// fixed by the seed, whatever the chunks. Once healed, it cuts that connection and passes
// everything on new ones. The target echoes, so the replies are the values the client sent.
func TestLossyProxy(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var echoed atomic.Int64 // bytes the target received
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 512)
				for {
					n, err := c.Read(buf)
					echoed.Add(int64(n))
					if _, werr := c.Write(buf[:n]); err != nil || werr != nil {
						return
					}
				}
			})
		}
	})

	cfg := Config{Replies: Fault{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Drop: 0.1}, Seed: 7}
	p, err := Start(ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sent []byte
	for i := range 60 {
		sent = fmt.Appendf(sent, "*2\r\n$4\r\necho\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
	}
	// What the replies of connection 0 keep, lost as the proxy will lose them.
	want := (&loss{p: cfg.Replies.Drop, rng: rand.New(rand.NewPCG(cfg.Seed, 4*0+2*1+1))}).keep(slices.Clone(sent))
	if len(want) == len(sent) {
		t.Fatal("the seed loses nothing; pick another")
	}

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	c.SetDeadline(deadline)
	for i := 0; i < len(sent); i += 7 { // in pieces, as several writes
		if _, err := c.Write(sent[i:min(i+7, len(sent))]); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read the replies kept: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	for echoed.Load() < int64(len(sent)) { // the requests all passed
		if time.Now().After(deadline) {
			t.Fatalf("the target received %d of %d bytes", echoed.Load(), len(sent))
		}
		time.Sleep(time.Millisecond)
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("after the loss: read %d bytes, %v; want nothing and the connection open", n, err)
	}
	if s := p.Stalls(); s != 1 {
		t.Fatalf("stalls = %d, want 1", s)
	}

	// Heal cuts the stalled connection; a new one loses nothing.
	p.Heal()
	c.SetReadDeadline(deadline)
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after Heal: read %d bytes, %v; want EOF", n, err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(deadline)
	if _, err := c2.Write(sent); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, len(sent))
	if _, err := io.ReadFull(c2, all); err != nil || !bytes.Equal(all, sent) {
		t.Fatalf("after Heal: read %q, %v; want every value", all, err)
	}
	c.Close()
	c2.Close()
	p.Close()
}
