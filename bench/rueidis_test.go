package bench

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlockrueidis"
)

// An rimpl is a library over rueidis clients of its own, made from the nodes' addresses.
type rimpl struct {
	name string
	make func(b *testing.B, addrs []string) locker
}

var rueidisImpls = []rimpl{
	{"redlock-rueidis", func(b *testing.B, addrs []string) locker {
		nodes := make([]driver.Node, len(addrs))
		for i, c := range rueidisClientsT(b, addrs) {
			nodes[i] = redlockrueidis.Node(c)
		}
		c, err := redlock.NewNodes(nodes)
		if err != nil {
			b.Fatal(err)
		}
		return ours{c, ttl}
	}},
	{"redsync-rueidis", func(b *testing.B, addrs []string) locker {
		cs := rueidisClientsT(b, addrs)
		pools := make([]redsyncredis.Pool, len(cs))
		for i, c := range cs {
			pools[i] = redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c))
		}
		return redsyncLocker{redsync.New(pools...), []redsync.Option{redsync.WithExpiry(ttl)}}
	}},
	{"rueidislock", func(b *testing.B, _ []string) locker {
		// Its keys are KeyMajority*2-1 = 5 keys of one rueidis client, here a cluster of 5
		// masters, so that they fall on several masters (by their hash slots).
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: redistest.Addrs(fiveMasters(b).Masters)},
			KeyMajority:    3,
			KeyValidity:    ttl,
			NoLoopTracking: true, // as its README advises on Redis ≥ 7.0.5
		})
		if err != nil {
			b.Fatal(err)
		}
		return rueidisLocker{l}
	}},
}

// five is rueidislock's cluster, started with its first benchmark and stopped in TestMain.
var five struct {
	once sync.Once
	cl   *redistest.Cluster
	err  error
}

func fiveMasters(b *testing.B) *redistest.Cluster {
	b.Helper()
	five.once.Do(func() {
		env.once.Do(startEnv) // its temporary directory
		if five.err = env.err; five.err == nil {
			five.cl, five.err = redistest.LaunchCluster(env.dir, 5)
		}
	})
	if five.err != nil {
		b.Fatalf("bench: start rueidislock's cluster: %v", five.err)
	}
	return five.cl
}

func stopFive() {
	if five.cl != nil {
		five.cl.Kill()
	}
}

// rueidisLocker is rueidislock: WithContext waits for the lock, its cancel releases it.
type rueidisLocker struct{ l rueidislock.Locker }

func (r rueidisLocker) lock(ctx context.Context, key string) (any, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return cancel, nil
}

func (r rueidisLocker) unlock(_ context.Context, h any) error {
	h.(context.CancelFunc)()
	return nil
}

func (r rueidisLocker) close() { r.l.Close() }

// 7. Lock+Unlock over rueidis clients: this library's rueidis nodes, redsync over its rueidis
// pool, both on the 5 servers, and rueidislock (5 keys on a cluster of 5 masters, a majority
// of 3). Uncontended, a fresh key each operation: serial, 8 and 64 goroutines; contended: 8
// clients of the library on one key for 2 s (run it with -benchtime=1x).
func BenchmarkRueidis(b *testing.B) {
	for _, mode := range []struct {
		name string
		p    int // goroutines per GOMAXPROCS; 0 for serial, -1 for contended
	}{{"serial", 0}, {"g8", 8 / runtime.GOMAXPROCS(0)}, {"g64", 64 / runtime.GOMAXPROCS(0)}, {"contended", -1}} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			for _, im := range rueidisImpls {
				b.Run("impl="+im.name, func(b *testing.B) {
					if mode.p < 0 {
						ls := make([]locker, contenders)
						for i := range ls {
							ls[i] = im.make(b, addrs(b, 5, false))
						}
						defer func() {
							for _, l := range ls {
								l.close()
							}
						}()
						warm(ls, 0)
						as := addrs(b, 5, false)
						before := readWork(b, as)
						acquired := contended(b, ls, contendWindow, 0, nil)
						if im.name != "rueidislock" { // its keys are on a cluster of its own
							reportWork(b, readWork(b, as).since(before), acquired, len(as))
						}
						return
					}
					l := im.make(b, addrs(b, 5, false))
					defer l.close()
					if mode.p == 0 {
						serial(b, l)
					} else {
						parallel(b, l, max(mode.p, 1))
					}
				})
			}
		})
	}
}
