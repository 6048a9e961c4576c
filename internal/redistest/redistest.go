// Package redistest starts Redis nodes for tests: in-memory miniredis servers, and real
// redis-server processes on free loopback ports that are stopped in t.Cleanup.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Client returns a go-redis client for addr with go-redis's defaults (3 s read timeout,
// retries on, no context deadlines), the way users build them; t.Cleanup closes it.
func Client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     addr,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// Clients returns a Client for each address, as the slice redlock.New takes.
func Clients(t testing.TB, addrs ...string) []redis.UniversalClient {
	t.Helper()
	cs := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		cs[i] = Client(t, a)
	}
	return cs
}

// MiniClients returns a client for each miniredis server that fails at once instead of
// retrying (no command retries, one dial): a closed in-memory node refuses connections, and
// go-redis's retries with back-off would only slow the tests down.
func MiniClients(t testing.TB, ms []*miniredis.Miniredis) []redis.UniversalClient {
	t.Helper()
	cs := make([]redis.UniversalClient, len(ms))
	for i, m := range ms {
		c := redis.NewClient(&redis.Options{
			Addr:                     m.Addr(),
			MaxRetries:               -1,
			DialerRetries:            1,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return cs
}

// Minis starts n miniredis servers; t.Cleanup closes them.
func Minis(t testing.TB, n int) []*miniredis.Miniredis {
	t.Helper()
	ms := make([]*miniredis.Miniredis, n)
	for i := range ms {
		ms[i] = miniredis.RunT(t)
	}
	return ms
}

// A Server is a redis-server process listening on a loopback port.
type Server struct {
	Addr string
	args []string
	dir  string
	env  []string // the process's environment, nil for this process's
	// user and pass log the readiness check in, for servers that require an ACL user.
	user, pass string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Require fails t when redis-server is not installed and the run must have it (under make test,
// REDLOCK_REQUIRE_REDIS=1, or in CI, CI=true); elsewhere it skips t.
func Require(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		require(t, fmt.Errorf("redis-server not found (apt-get install -y redis-server): %w", err))
	}
	return path
}

// require fails t for want of what err names when the run must have it, and skips it elsewhere.
func require(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" || os.Getenv("REDLOCK_REQUIRE_REDIS") != "" {
		t.Fatalf("required here but missing: %v", err)
	}
	t.Skipf("missing: %v", err)
}

// Start starts a redis-server on a free loopback port, without persistence unless args ask for
// it; t.Cleanup kills it. args are extra redis-server options such as "--appendonly", "yes".
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	s := &Server{args: args, dir: t.TempDir()}
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// listen starts s on a free loopback port.
func (s *Server) listen() error {
	var err error
	for range 5 { // a free port may be taken between finding and binding it
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

// StartN starts n servers.
func StartN(t testing.TB, n int, args ...string) []*Server {
	t.Helper()
	ss := make([]*Server, n)
	for i := range ss {
		ss[i] = Start(t, args...)
	}
	return ss
}

// Addrs returns the addresses of ss.
func Addrs(ss []*Server) []string {
	addrs := make([]string, len(ss))
	for i, s := range ss {
		addrs[i] = s.Addr
	}
	return addrs
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{
		"--bind", "127.0.0.1", "--port", port, "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
	}, s.args...)
	cmd := exec.Command("redis-server", args...)
	cmd.Env = s.env
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: s.user, Password: s.pass, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			s.mu.Lock()
			s.cmd, s.exited = cmd, exited
			s.mu.Unlock()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, out)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on %s did not answer: %v; output: %s", s.Addr, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Pause stops the process (SIGSTOP): it keeps its connections but answers nothing. t.Cleanup
// resumes it, before the clean-ups registered earlier run (those of clients made before).
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(syscall.SIGSTOP)
	t.Cleanup(s.Resume)
}

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Kill ends the process at once (SIGKILL); what it held in memory only is lost.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// RestartEmpty kills the process and starts a new one on the same address with its data
// directory emptied: everything it held is lost, whatever its persistence.
func (s *Server) RestartEmpty(t testing.TB) {
	t.Helper()
	s.kill()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	s.Restart(t)
}

// Restart kills the process and starts a new one on the same address with the same options:
// it keeps its data only when those options persist it (for example "--appendonly", "yes",
// "--appendfsync", "always").
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.kill()
	var err error
	for range 50 { // the port can linger a moment after the kill
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redistest: restart %s: %v", s.Addr, err)
}

// Quiet stops go-redis from logging every refused dial of the nodes that tests take down on
// purpose. Call it from TestMain; it changes go-redis's process-wide logger.
func Quiet() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Eventually polls cond until it holds, failing t after 10 s: for state that a call leaves to
// the nodes that answer after its quorum decided.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 10s: %s", what)
		}
	}
}

// Receive waits for a value from ch and returns it, failing t after 10 s with what: for a test
// that waits on another goroutine's signal (a call's result, a lock's Lost, fn's ctx.Done()),
// so that a mechanism that broke fails the test in seconds instead of at the package timeout.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("still not so after 10s: %s", what)
	}
	var zero T
	return zero
}
