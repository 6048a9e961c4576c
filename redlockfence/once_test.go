package redlockfence_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// A write whose reply never comes is sent once: go-redis, which retries a command whose
// connection broke before its reply, does not send the script again, since the first may have
// run (a second run would write twice, or find its own token recorded by a later holder and
// report as stale a write that happened). The error says the outcome is unknown. On a real
// redis-server, through a proxy that cuts the connection instead of passing the reply on, once
// the client's connections are open.
func TestRedisWriteSentOnce(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	p := startHolder(t, s.Addr)
	// Retries on, as by default, over four open connections.
	slow := redis.NewClient(&redis.Options{Addr: p.addr, PoolSize: 4, MinIdleConns: 4})
	defer slow.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { slow.Ping(ctx) })
	}
	wg.Wait()
	direct := redistest.Client(t, s.Addr)
	const incr = "return redis.call('INCR', KEYS[1])"
	// Once directly, so that the server knows the script and EVALSHA runs it.
	if _, err := redlockfence.NewRedis(direct).Eval(ctx, "{r}", 7, incr, []string{"{r}:runs"}); err != nil {
		t.Fatal(err)
	}
	p.cut.Store(true)
	_, err := redlockfence.NewRedis(slow).Eval(ctx, "{r}", 7, incr, []string{"{r}:runs"})
	if err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("Eval with its reply lost: %v, want an error saying the outcome is unknown", err)
	}
	if runs := direct.Get(ctx, "{r}:runs").Val(); runs != "2" {
		t.Fatalf("the late call's script ran %s times in all, want once (2 with the direct call)", runs)
	}
}

// A holder forwards connections to a server; once cut is set, it closes each connection
// opened before where the server's reply would go (a connection opened after passes its
// replies: its handshake goes through).
type holder struct {
	addr string
	cut  atomic.Bool
}

// startHolder starts a holder to target; t.Cleanup stops it.
func startHolder(t *testing.T, target string) *holder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &holder{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, server)
			mu.Unlock()
			wg.Go(func() { io.Copy(server, c); server.Close() })
			cuts := !h.cut.Load()
			wg.Go(func() { h.replies(c, server, cuts) })
		}
	})
	return h
}

// replies copies server's replies to c, until cut is set when cuts.
func (h *holder) replies(c, server net.Conn, cuts bool) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if cuts && h.cut.Load() {
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
