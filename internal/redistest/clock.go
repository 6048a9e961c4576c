package redistest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest/faketime"
)

// StartFaketime starts a redis-server like Start, under libfaketime: its wall clock (what
// TIME answers, and what expires keys) is this machine's until SetClock moves it. Where
// libfaketime is not installed it fails t when the run must have redis-server (see Require),
// and skips t elsewhere.
func StartFaketime(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	lib, err := faketime.Find()
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("REDLOCK_REQUIRE_REDIS") != "" {
			t.Fatalf("redistest: %v (apt-get install -y faketime)", err)
		}
		t.Skipf("redistest: %v", err)
	}
	// The setting lives outside the data directory, which RestartEmpty empties.
	s := &Server{args: args, dir: t.TempDir(), clockFile: filepath.Join(t.TempDir(), "faketime")}
	s.env = faketime.Env(os.Environ(), lib, s.clockFile)
	if err := faketime.Set(s.clockFile, 0, 1); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server under libfaketime: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// SetClock makes the wall clock of a server from StartFaketime read
// began + rate·(t − began) + offset from now on, t being the true time and began about when
// the process started: rate 1.05 runs 5 % fast, offset time.Hour puts it an hour ahead.
func (s *Server) SetClock(t testing.TB, offset time.Duration, rate float64) {
	t.Helper()
	if s.clockFile == "" {
		t.Fatalf("redistest: %s was not started with StartFaketime", s.Addr)
	}
	if err := faketime.Set(s.clockFile, offset, rate); err != nil {
		t.Fatalf("redistest: set the clock of %s: %v", s.Addr, err)
	}
}
