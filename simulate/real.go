package simulate

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/faketime"
)

// Real is the backend of real servers: every node is a redis-server process that the run starts
// on a free loopback port and stops, and every fault is real. A crash is SIGKILL; a restart
// keeping its data starts the process again over its append-only file (appendfsync always); a
// restart losing it starts it over an emptied directory. Clients reach each node through a TCP
// proxy of their own that delays, loses replies or cuts. A node's clock is the server's own,
// shifted and sped up by libfaketime while it runs. A replica is a second process started with
// --replicaof, whose replication stream a valve holds back between catch-ups, then promoted with
// REPLICAOF NO ONE. Runs take real time: use it with Options.Scale, never inside synctest.
type Real struct {
	// Server is the redis-server binary (or any server that speaks the protocol and takes
	// redis-server's options); "" looks up redis-server in PATH.
	Server string
	// Faketime is libfaketime's library, loaded into the servers of the scenarios that change
	// node clocks; "" searches where packages install it.
	Faketime string
}

func (Real) String() string { return "real" }

func (Real) tcp() bool { return true }

func (Real) gap(sc Scenario) string { return sc.NotOnReal }

// InstallHint is the command that installs what the real backend needs on Debian or Ubuntu.
const InstallHint = "apt-get install -y redis-server faketime"

// Check finds the server binary and, when one of scs changes node clocks, libfaketime. It
// returns the backend with both paths filled in, or an error that says what to install.
func (b Real) Check(scs ...Scenario) (Real, error) {
	bin := b.Server
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return b, fmt.Errorf("simulate: the real backend needs redis-server (%s): %w", InstallHint, err)
	}
	b.Server = path
	for _, sc := range scs {
		if sc.NodeClocks && b.Faketime == "" {
			if b.Faketime, err = FindFaketime(); err != nil {
				return b, fmt.Errorf("simulate: scenario %s changes node clocks: %w", sc.Name, err)
			}
		}
	}
	return b, nil
}

// FindFaketime returns the path of libfaketime's library, or an error saying what to install.
func FindFaketime() (string, error) {
	lib, err := faketime.Find()
	if err != nil {
		return "", fmt.Errorf("simulate: %w", err)
	}
	return lib, nil
}

func (b Real) newNode(name string, start time.Time, sc Scenario) *node {
	n := &node{name: name, clock: newSkew(start)}
	s := &realServer{name: name, bin: b.Server, clock: n.clock, clocks: sc.NodeClocks, faketime: b.Faketime}
	if s.bin == "" {
		s.bin = "redis-server"
	}
	n.server = s
	return n
}

// realServer serves a node with a redis-server process, and optionally a replica process.
type realServer struct {
	name     string
	bin      string
	clock    *skew
	clocks   bool   // the servers run under libfaketime
	faketime string // its library; "" is searched for at start

	mu      sync.Mutex
	dir     string
	master  *proc
	replica *proc
	valve   *valve
	up      bool
	persist bool // appendonly with appendfsync always
	paired  bool // start a replica
	failed  error
}

var _ server = (*realServer)(nil)

func (s *realServer) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clocks && s.faketime == "" {
		var err error
		if s.faketime, err = FindFaketime(); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "redlock-simulate-"+s.name+"-")
	if err != nil {
		return fmt.Errorf("simulate: node %s: %w", s.name, err)
	}
	s.dir = dir
	if s.master, err = s.launch(ctx, "master", 0); err != nil {
		return err
	}
	s.up = true
	if !s.paired {
		return nil
	}
	if s.valve, err = openValve(s.master.addr); err != nil {
		return fmt.Errorf("simulate: node %s: %w", s.name, err)
	}
	if s.replica, err = s.launch(ctx, "replica", 0, "--replicaof", "127.0.0.1", port(s.valve.addr())); err != nil {
		return err
	}
	// Let the first full synchronisation through, then hold the stream back.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := command(ctx, s.replica.addr, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("simulate: node %s: the replica did not synchronise: %v", s.name, err)
		}
	}
	s.valve.hold()
	return nil
}

// launch starts a server named role in its own directory, on port or a free one, and waits
// until it answers.
func (s *realServer) launch(ctx context.Context, role string, port int, extra ...string) (*proc, error) {
	p := &proc{dir: filepath.Join(s.dir, role)}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("simulate: node %s: %w", s.name, err)
	}
	// A replica's first synchronisation starts at once, not after the default 5 s wait for
	// more replicas.
	args := []string{"--bind", "127.0.0.1", "--dir", p.dir, "--save", "", "--protected-mode", "no", "--daemonize", "no",
		"--repl-diskless-sync-delay", "0"}
	if s.persist && role == "master" {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, extra...)
	var env []string
	if s.clocks {
		p.clockFile = filepath.Join(p.dir, "faketime")
		env = faketime.Env(s.faketime, p.clockFile)
	}
	var err error
	for try := range 20 {
		pt := port
		if pt == 0 || try >= 10 { // the old port may be taken meanwhile: take another
			if pt, err = freePort(); err != nil {
				continue
			}
		}
		if err = p.start(ctx, s.bin, append(args, "--port", strconv.Itoa(pt)), env, s.clock); err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("simulate: node %s: start %s: %w", s.name, s.bin, err)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func (s *realServer) dial(ctx context.Context) (net.Conn, error) {
	s.mu.Lock()
	up, m := s.up, s.master
	s.mu.Unlock()
	if !up || m == nil {
		return nil, errNodeDown
	}
	d := net.Dialer{Timeout: time.Second}
	return d.DialContext(ctx, "tcp", m.addr)
}

func (s *realServer) sync() {}

func (s *realServer) clockChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range []*proc{s.master, s.replica} {
		if p != nil {
			s.fail(p.setClock(s.clock))
		}
	}
}

// fail records the first fault that did not take effect, for the result.
func (s *realServer) fail(err error) {
	if err != nil && s.failed == nil {
		s.failed = fmt.Errorf("simulate: node %s: %w", s.name, err)
	}
}

func (s *realServer) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *realServer) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up = false
	s.master.kill()
}

func (s *realServer) keepOnRestart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.persist = true
}

func (s *realServer) restart(keepData bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.master
	if old == nil {
		return
	}
	old.kill()
	if !keepData {
		if err := os.RemoveAll(old.dir); err != nil {
			s.fail(err)
		}
	}
	pt, _ := strconv.Atoi(port(old.addr))
	p, err := s.launch(context.Background(), "master", pt)
	if err != nil {
		s.fail(err)
		return
	}
	s.master, s.up = p, true
}

func (s *realServer) withReplica() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paired = true
}

// replicate lets the replica catch up: through the valve until it has applied everything the
// master had written when it began (the master's writes reach the valve a moment after they
// return).
func (s *realServer) replicate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up || s.valve == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	want, err := replOffset(ctx, s.master.addr, "master_repl_offset")
	for err == nil {
		if err = s.valve.flush(); err != nil {
			break
		}
		var got int64
		if got, err = replOffset(ctx, s.replica.addr, "slave_repl_offset"); err == nil && got >= want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	s.fail(fmt.Errorf("the replica did not catch up: %w", err))
}

// replOffset reads field, a replication offset, from the INFO of the server at addr.
func replOffset(ctx context.Context, addr, field string) (int64, error) {
	info, err := command(ctx, addr, "INFO", "replication")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO replication", field)
}

func (s *realServer) failover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replica == nil {
		return
	}
	s.master.kill()
	s.valve.close() // what it held back is lost with the master
	s.valve = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := command(ctx, s.replica.addr, "REPLICAOF", "NO", "ONE"); err != nil {
		s.fail(fmt.Errorf("promote the replica: %w", err))
	}
	s.master, s.replica, s.up = s.replica, nil, true
}

func (s *realServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up = false
	if s.valve != nil {
		s.valve.close()
	}
	s.master.kill()
	s.replica.kill()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
