// Package pgtest starts PostgreSQL servers for tests: initdb and pg_ctl in a temporary
// directory, a server on a free loopback port, stopped in t.Cleanup. It uses no database
// driver: a test connects to DSN with its own.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A Server is a running PostgreSQL server.
type Server struct {
	// DSN reaches the server's database "postgres" as the superuser "postgres", over TCP on
	// loopback, with no password (trust authentication) and no TLS.
	DSN  string
	Port int
	// Dir holds the server's data ("data"), its log ("log") and its Unix socket; t.Cleanup
	// removes it.
	Dir string

	bin  string              // the directory of initdb, pg_ctl and postgres
	cred *syscall.Credential // whom the server runs as; nil for this process's user
}

// Require returns the directory of PostgreSQL's initdb and pg_ctl: initdb's on the PATH, else
// the newest /usr/lib/postgresql/*/bin (Debian's postgresql package). Without them it skips t,
// or fails it when the run must have its servers (REDLOCK_REQUIRE_REDIS set, as make test
// does, or CI=true).
func Require(t testing.TB) string {
	t.Helper()
	bin, err := find()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" || os.Getenv("REDLOCK_REQUIRE_REDIS") != "" {
		t.Fatalf("PostgreSQL is required here but not installed (apt-get install -y postgresql): %v", err)
	}
	t.Skipf("PostgreSQL not installed: %v", err)
	return ""
}

func find() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if bin := filepath.Dir(p); exists(filepath.Join(bin, "pg_ctl")) {
			return bin, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, bin := range dirs {
		if exists(filepath.Join(bin, "initdb")) && exists(filepath.Join(bin, "pg_ctl")) {
			return bin, nil
		}
	}
	return "", fmt.Errorf("no initdb and pg_ctl on the PATH nor in /usr/lib/postgresql/*/bin")
}

// version reads the major version from /usr/lib/postgresql/VERSION/bin; 0 when it cannot.
func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Start initialises a database cluster in a temporary directory and starts a server on a free
// loopback port (fsync off: nothing here needs to survive a crash of the machine). As root it
// runs initdb and the server as the user "postgres", which PostgreSQL requires. t.Cleanup stops
// the server (pg_ctl stop -m immediate) and removes the directory.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	s, err := Launch()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch is Start for callers without a testing.TB (a TestMain, a server shared by a
// package's tests): the caller stops the server with Stop. It fails when PostgreSQL is not
// installed.
func Launch() (*Server, error) {
	bin, err := find()
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL not installed (apt-get install -y postgresql): %w", err)
	}
	s := &Server{bin: bin}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	err = s.run(90*time.Second, "initdb", "-D", s.data(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err == nil {
		for range 5 { // a free port may be taken between finding and binding it
			if err = s.start(); err == nil {
				return s, nil
			}
		}
	}
	os.RemoveAll(s.Dir)
	return nil, err
}

// prepare makes the directory, owned by the user the server runs as.
func (s *Server) prepare() error {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return err
	}
	s.Dir = dir
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, and PostgreSQL refuses to run as root: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return os.Chown(dir, uid, gid)
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// start starts the server on a port that was free a moment ago and waits until it accepts
// connections.
func (s *Server) start() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=32MB", s.Port, s.Dir)
	err = s.run(60*time.Second, "pg_ctl", "start", "-D", s.data(), "-l", filepath.Join(s.Dir, "log"),
		"-w", "-t", "45", "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		return fmt.Errorf("%v; server log:\n%s", err, log)
	}
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	return nil
}

// Stop stops the server at once (pg_ctl stop -m immediate, within 30 s) and removes its
// directory, data and all.
func (s *Server) Stop() {
	s.run(30*time.Second, "pg_ctl", "stop", "-D", s.data(), "-m", "immediate", "-w", "-t", "20")
	os.RemoveAll(s.Dir)
}

// run runs one of PostgreSQL's programs as the server's user, for at most d.
func (s *Server) run(d time.Duration, prog string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.WaitDelay = time.Second
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %v: %s", prog, args, err, out)
	}
	return nil
}
