package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// A Cluster is a Redis Cluster of masters only, each a redis-server process of its own.
type Cluster struct {
	Masters []*Server
}

// StartCluster starts a Redis Cluster of masters cluster-enabled redis-servers on free loopback
// ports, gives each an equal share of the 16384 slots, joins them, and waits until every master
// sees the whole cluster. t.Cleanup kills them. A master that is down does not take the others
// with it (cluster-require-full-coverage no). args are extra redis-server options.
func StartCluster(t testing.TB, masters int, args ...string) *Cluster {
	t.Helper()
	Require(t)
	cl, err := LaunchCluster(t.TempDir(), masters, args...)
	if cl != nil {
		t.Cleanup(cl.Kill)
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return cl
}

// LaunchCluster is StartCluster for callers without a testing.TB: files go under dir, and the
// caller stops the cluster with Kill, also when it returns an error with the cluster.
func LaunchCluster(dir string, masters int, args ...string) (*Cluster, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not installed (apt-get install -y redis-server): %w", err)
	}
	cl := &Cluster{}
	for range masters {
		d, err := os.MkdirTemp(dir, "node-")
		if err != nil {
			return cl, err
		}
		s := &Server{dir: d, args: append([]string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "no",
		}, args...)}
		if err := s.listenCluster(); err != nil {
			return cl, fmt.Errorf("start cluster node: %w", err)
		}
		cl.Masters = append(cl.Masters, s)
	}
	ctx := context.Background()
	for i, s := range cl.Masters {
		c := plain(s.Addr)
		first, last := i*16384/masters, (i+1)*16384/masters-1
		err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err()
		if err == nil && i > 0 {
			host, port, _ := net.SplitHostPort(cl.Masters[0].Addr)
			err = c.ClusterMeet(ctx, host, port).Err()
		}
		c.Close()
		if err != nil {
			return cl, fmt.Errorf("join %s: %w", s.Addr, err)
		}
	}
	return cl, cl.wait()
}

// Kill ends every master at once (SIGKILL).
func (cl *Cluster) Kill() {
	for _, s := range cl.Masters {
		s.Kill()
	}
}

// Wait waits until every master that is up sees the cluster whole: state ok, every master
// known, and all 16384 slots served.
func (cl *Cluster) Wait(t testing.TB) {
	t.Helper()
	if err := cl.wait(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

func (cl *Cluster) wait() error {
	for deadline := time.Now().Add(10 * time.Second); !cl.whole(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("the cluster is not ok on every master after 10s")
		}
	}
	return nil
}

func (cl *Cluster) whole() bool {
	for _, s := range cl.Masters {
		c := plain(s.Addr)
		info, err := c.ClusterInfo(context.Background()).Result()
		c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") ||
			!strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(cl.Masters))+"\r") ||
			!strings.Contains(info, "cluster_slots_assigned:16384\r") {
			return false
		}
	}
	return true
}

// Client returns a cluster client seeded with every master's address, with go-redis's
// defaults otherwise; t.Cleanup closes it.
func (cl *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    Addrs(cl.Masters),
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// Owner returns the master that serves key's slot, by asking the first master that answers.
func (cl *Cluster) Owner(t testing.TB, key string) *Server {
	t.Helper()
	for _, s := range cl.Masters {
		c := plain(s.Addr)
		owner, err := keyslot.Owners(context.Background(), c)
		c.Close()
		if err != nil {
			continue
		}
		for _, m := range cl.Masters {
			if m.Addr == owner[keyslot.Of(key)] {
				return m
			}
		}
	}
	t.Fatalf("redistest: no master serves %q", key)
	return nil
}

// plain is a client of one node for set-up calls, failing at once rather than retrying.
func plain(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// listenCluster starts s on a free loopback port whose cluster bus port, 10000 higher, is free
// too.
func (s *Server) listenCluster() error {
	var err error
	for range 20 {
		port := 10000 + rand.IntN(55535-10000)
		if !free(port) || !free(port+10000) {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("no free pair of ports: %v", err)
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Migrate moves the slot of key from the master that serves it to master to, the way
// redis-cli --cluster reshard does: to imports the slot, the source marks it migrating, during
// runs, the slot's keys move with MIGRATE, and then every master learns the new owner.
func (cl *Cluster) Migrate(t testing.TB, key string, to *Server, during func()) {
	t.Helper()
	ctx := context.Background()
	from := cl.Owner(t, key)
	if from == to {
		t.Fatalf("redistest: %s serves %q already", to.Addr, key)
	}
	src, dst := plain(from.Addr), plain(to.Addr)
	defer src.Close()
	defer dst.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("redistest: migrate the slot of %q from %s to %s: %v", key, from.Addr, to.Addr, err)
		}
	}
	slot, err := src.ClusterKeySlot(ctx, key).Result()
	must(err)
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	must(err)
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	must(err)
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	during()
	keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 1000).Result()
	must(err)
	if len(keys) > 0 {
		host, port, _ := net.SplitHostPort(to.Addr)
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	for _, s := range cl.Masters {
		c := plain(s.Addr)
		err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		c.Close()
		must(err)
	}
	cl.Wait(t)
}
