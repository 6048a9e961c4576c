package bench

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
)

// clusters are the Redis Clusters of BenchmarkCluster: three of one master each, and one of
// three masters. They start with the first run of it and stop in TestMain.
var clusters struct {
	once   sync.Once
	err    error
	single []*redistest.Cluster
	three  *redistest.Cluster
}

func startClusters() {
	env.once.Do(startEnv) // its temporary directory
	if clusters.err = env.err; clusters.err != nil {
		return
	}
	for range 3 {
		cl, err := redistest.LaunchCluster(env.dir, 1)
		if cl != nil {
			clusters.single = append(clusters.single, cl)
		}
		if err != nil {
			clusters.err = err
			return
		}
	}
	cl, err := redistest.LaunchCluster(env.dir, 3)
	clusters.three, clusters.err = cl, err
}

func stopClusters() {
	for _, cl := range clusters.single {
		cl.Kill()
	}
	if clusters.three != nil {
		clusters.three.Kill()
	}
}

// clusterClient returns a go-redis cluster client of cl with go-redis's defaults, closed when b
// ends.
func clusterClient(b *testing.B, cl *redistest.Cluster) *redis.ClusterClient {
	b.Helper()
	return cl.Client(b)
}

// 5. Uncontended serial Lock+Unlock on Redis Cluster, beside 3 plain servers: 3 clusters of one
// master each, one a node; and NewCluster's 3 votes on one cluster of 3 masters. The floor
// runs on the first two (it has no votes).
func BenchmarkCluster(b *testing.B) {
	clusters.once.Do(startClusters)
	if clusters.err != nil {
		b.Fatalf("bench: start the clusters: %v", clusters.err)
	}
	for _, topo := range []string{"servers", "clusters", "votes"} {
		b.Run("nodes="+topo, func(b *testing.B) {
			for _, im := range []impl{implFloor, implOurs} {
				if topo == "votes" && im.name != implOurs.name {
					continue
				}
				b.Run("impl="+im.name, func(b *testing.B) {
					var l locker
					switch topo {
					case "servers":
						l = im.make(b, clients(b, addrs(b, 3, false)))
					case "clusters":
						nodes := make([]redis.UniversalClient, 3)
						for i, cl := range clusters.single {
							nodes[i] = clusterClient(b, cl)
						}
						l = im.make(b, nodes)
					case "votes":
						c, err := redlock.NewCluster(context.Background(), clusterClient(b, clusters.three), 3)
						if err != nil {
							b.Fatal(err)
						}
						l = ours{c, ttl}
					}
					defer l.close()
					serial(b, l)
				})
			}
		})
	}
}
