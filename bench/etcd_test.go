package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdMembers is the size of the etcd cluster beside redlock's five redis-servers: three
// members, so that every write is agreed by a quorum of two over the network, as redlock's
// by three of five, rather than by one process alone.
const etcdMembers = 3

// etcdTiming are the members' raft timings: a heartbeat every 50 ms, an election after 500 ms
// without one (etcd's defaults are 100 ms and 1 s). etcd grants no lease shorter than 1.5
// election timeouts, rounded up to whole seconds: 2 s with the defaults, which would turn the
// crash case's 1 s ttl into 2 s; 1 s with these. Both are within etcd's tuning guide for a
// loopback round trip (a heartbeat near the round trip, an election timeout ten heartbeats).
var etcdTiming = []string{"--heartbeat-interval", "50", "--election-timeout", "500"}

// etcdCluster is the etcd cluster of BenchmarkFailover, started with its first run and
// stopped in TestMain.
var etcdCluster struct {
	once      sync.Once
	err       error
	dir       string
	endpoints []string
	members   []*exec.Cmd
	exited    []chan struct{}
	logs      []*bytes.Buffer
}

// etcdEndpoints returns the client URLs of the etcd cluster, starting it the first time. It
// skips b when etcd is not installed: etcd is a peer to compare with, not something make bench
// requires (apt-get install -y etcd-server).
func etcdEndpoints(b *testing.B) []string {
	b.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		b.Skip("etcd not installed (apt-get install -y etcd-server): no etcd figures")
	}
	etcdCluster.once.Do(startEtcd)
	if etcdCluster.err != nil {
		b.Fatalf("bench: start etcd: %v", etcdCluster.err)
	}
	return etcdCluster.endpoints
}

// startEtcd starts etcdMembers members on free loopback ports, their data in memory (under
// /dev/shm where there is one: the redis-servers persist nothing either), and waits until the
// cluster serves a linearizable read.
func startEtcd() {
	c := &etcdCluster
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	if c.dir, c.err = os.MkdirTemp(base, "redlock-bench-etcd-"); c.err != nil {
		return
	}
	ports := make([]int, 2*etcdMembers) // a client port and a peer port each
	for i := range ports {
		if ports[i], c.err = loopbackPort(); c.err != nil {
			return
		}
	}
	url := func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }
	var initial []string
	for i := range etcdMembers {
		initial = append(initial, fmt.Sprintf("m%d=%s", i, url(ports[2*i+1])))
	}
	for i := range etcdMembers {
		client, peer := url(ports[2*i]), url(ports[2*i+1])
		args := append([]string{
			"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(c.dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "redlock-bench", "--logger", "zap", "--log-level", "error",
		}, etcdTiming...)
		cmd := exec.Command("etcd", args...)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if c.err = cmd.Start(); c.err != nil {
			return
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		c.members, c.exited, c.logs = append(c.members, cmd), append(c.exited, exited), append(c.logs, out)
		c.endpoints = append(c.endpoints, client)
	}
	c.err = waitEtcd(c.endpoints)
}

// waitEtcd waits up to 30 s for the cluster to serve a linearizable read, which needs a leader.
func waitEtcd(endpoints []string) error {
	cli, err := newEtcdClient(endpoints)
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "bench-ready")
		cancel()
		if err == nil {
			return nil
		}
		for i, exited := range etcdCluster.exited {
			select {
			case <-exited:
				return fmt.Errorf("etcd member %d exited: %s", i, etcdCluster.logs[i])
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd did not answer within 30 s: %v; member 0 says: %s", err, etcdCluster.logs[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stopEtcd() {
	for i, cmd := range etcdCluster.members {
		cmd.Process.Kill()
		<-etcdCluster.exited[i]
	}
	if etcdCluster.dir != "" {
		os.RemoveAll(etcdCluster.dir)
	}
}

// newEtcdClient returns an etcd client over every member, as a process would make it, with
// its log off.
func newEtcdClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// loopbackPort returns a loopback port that was free a moment ago.
func loopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
