// Package bench measures redlock beside the Go lock libraries people use today (redsync v4,
// bsm/redislock) and beside a floor: the least work any go-redis Redlock must do. It is its
// own module so that the peers never enter the library's dependency graph. `make bench` runs
// it in interleaved rounds and writes BENCHMARKS.md.
package bench

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/redistest/delayproxy"
)

const (
	maxNodes  = 7                     // the largest cluster measured (BenchmarkNodes)
	slowDelay = 20 * time.Millisecond // each way, in front of node 0 in BenchmarkSlowNode
	ttl       = 8 * time.Second       // redsync's default expiry, used by every library here
)

// servers are the redis-server processes every benchmark shares, and proxy the delay proxy in
// front of servers[0]. They start with the first benchmark that needs them (so that compiling
// and vetting the module, as make test does, starts nothing) and stop in TestMain.
var env struct {
	once    sync.Once
	err     error
	dir     string
	servers []*redistest.Server
	proxy   *delayproxy.Proxy
}

func TestMain(m *testing.M) {
	redistest.Quiet()
	code := m.Run()
	stopClusters()
	stopFive()
	stopEtcd()
	stopEnv()
	os.Exit(code)
}

func startEnv() {
	env.dir, env.err = os.MkdirTemp("", "redlock-bench-")
	if env.err != nil {
		return
	}
	for range maxNodes {
		s, err := redistest.Launch(env.dir)
		if err != nil {
			env.err = err
			return
		}
		env.servers = append(env.servers, s)
	}
	env.proxy, env.err = delayproxy.StartDelay(env.servers[0].Addr, slowDelay)
}

func stopEnv() {
	if env.proxy != nil {
		env.proxy.Close()
	}
	for _, s := range env.servers {
		s.Kill()
	}
	if env.dir != "" {
		os.RemoveAll(env.dir)
	}
}

// addrs returns the addresses of the first n servers; with slow, node 0 is reached through the
// delay proxy.
func addrs(b *testing.B, n int, slow bool) []string {
	b.Helper()
	env.once.Do(startEnv)
	if env.err != nil {
		b.Fatalf("bench: start the servers: %v", env.err)
	}
	as := redistest.Addrs(env.servers[:n])
	if slow {
		as[0] = env.proxy.Addr()
	}
	return as
}

// clients returns go-redis clients built with go-redis's defaults, one per address, closed
// when b ends. Every library under test gets clients of its own.
func clients(b *testing.B, as []string) []redis.UniversalClient {
	b.Helper()
	return redistest.Clients(b, as...)
}

var keySeq atomic.Int64

// newKey returns a key no other benchmark of this process uses.
func newKey() string { return fmt.Sprintf("bench:%d", keySeq.Add(1)) }
