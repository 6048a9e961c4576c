package doctor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock/doctor"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// servers starts a redis-server for each set of options in args, as the example's deployment
// (Check reads what only a real server says: INFO, CONFIG GET, ACL DRYRUN).
func servers(args ...[]string) (nodes []redis.UniversalClient, stop func()) {
	dir, err := os.MkdirTemp("", "redlock-example-")
	if err != nil {
		panic(err)
	}
	var started []*redistest.Server
	stop = func() {
		for i, s := range started {
			nodes[i].Close()
			s.Kill()
		}
		os.RemoveAll(dir)
	}
	for _, a := range args {
		s, err := redistest.Launch(dir, a...)
		if err != nil {
			stop()
			panic(err)
		}
		started = append(started, s)
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: s.Addr}))
	}
	return nodes, stop
}

// Check reads every node for a while and says, per node and per assumption of the Redlock
// guarantee, whether it holds. Here the third server may evict keys when its memory is full:
// a lock key held there could vanish. (The example prints the eviction check alone: the
// clock's margin and the round trips depend on how busy the machine is.)
func ExampleCheck() {
	aof := []string{"--appendonly", "yes", "--appendfsync", "always"}
	clients, stop := servers(aof, aof, append(aof, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"))
	defer stop()
	var nodes []driver.Node // the nodes redlock.New makes of clients
	for _, c := range clients {
		nodes = append(nodes, goredisnode.New(c))
	}

	checkup, err := doctor.Check(context.Background(), doctor.Setup{Nodes: nodes, NodeTimeout: time.Second}, 300*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range checkup.Findings {
		if f.Check == "eviction" {
			fmt.Printf("node %d %s %s: %s\n", f.Node, f.Check, f.Verdict, f.Detail)
		}
	}
	fmt.Println("verdict:", checkup.Verdict)
	// Output:
	// node 0 eviction ok: no maxmemory: no key is ever evicted
	// node 1 eviction ok: no maxmemory: no key is ever evicted
	// node 2 eviction fail: maxmemory 10.00M with allkeys-lru: under memory pressure any key is evicted, lock keys too, and a held lock vanishes: set maxmemory-policy noeviction
	// verdict: fail
}
