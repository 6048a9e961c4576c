package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/redlock"
)

// clusters starts n in-memory servers that answer as one-master Redis Clusters, standing in
// for independent clusters; with real ones, give each ClusterClient its cluster's addresses.
func clusters(n int) (nodes []*redis.ClusterClient, stop func()) {
	var servers []*miniredis.Miniredis
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			panic(err)
		}
		servers = append(servers, m)
		nodes = append(nodes, redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}}))
	}
	return nodes, func() {
		for i := range nodes {
			nodes[i].Close()
			servers[i].Close()
		}
	}
}

// Each node may be a whole Redis Cluster that counts as one vote. Keys with hash tags work:
// everything the lock keeps beside the key lives in the key's slot.
func ExampleNew_clusters() {
	ccs, stop := clusters(3)
	defer stop()
	nodes := make([]redis.UniversalClient, len(ccs))
	for i, cc := range ccs {
		nodes[i] = cc
	}

	// A generous node timeout: the stand-ins share one process, and Unlock's round is decided
	// within the node timeout (100 ms by default), which a busy machine can miss.
	locker, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	ctx := context.Background()
	lock, err := locker.Lock(ctx, "{user:7}:profile", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", lock.Key(), "with a fencing token:", lock.Fence() > 0)
	fmt.Println("released:", lock.Unlock(ctx) == nil)
	// Output:
	// holding {user:7}:profile with a fencing token: true
	// released: true
}

// One cluster can give the votes itself: each vote is a key on a different master. This
// stand-in has one master, so it can give one vote; a cluster of five masters can give five.
func ExampleNewCluster() {
	ccs, stop := clusters(1)
	defer stop()
	ctx := context.Background()

	if _, err := redlock.NewCluster(ctx, ccs[0], 3); err != nil {
		fmt.Println(err)
	}
	locker, err := redlock.NewCluster(ctx, ccs[0], 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	lock, err := locker.TryLock(ctx, "orders:42", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", lock.Key())
	fmt.Println("released:", lock.Unlock(ctx) == nil)
	// Output:
	// redlock: place 3 votes on the cluster: 3 votes need as many masters serving slots; the cluster has 1
	// holding orders:42
	// released: true
}
