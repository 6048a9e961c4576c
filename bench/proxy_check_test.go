package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
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
	p, err := startDelayProxy(ln.Addr().String(), delay)
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
