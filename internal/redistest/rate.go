package redistest

import (
	"path/filepath"
	"testing"

	"github.com/quorumlock/redlock/internal/faketime"
)

// StartRate starts a redis-server like Start whose wall clock (TIME, and the expiry of its
// keys) runs at rate against the true time, 1.05 for 5 % fast, through libfaketime: it starts
// at rate 1 and gets its rate once it answers (see faketime.Set). libfaketime missing fails t
// under make test and skips it elsewhere, as Require does.
func StartRate(t testing.TB, rate float64, args ...string) *Server {
	t.Helper()
	Require(t)
	lib, err := faketime.Find()
	if err != nil {
		require(t, err)
	}
	setting := filepath.Join(t.TempDir(), "faketime")
	if err := faketime.Set(setting, 0, 1); err != nil {
		t.Fatal(err)
	}
	s := &Server{args: args, dir: t.TempDir(), env: faketime.Env(lib, setting)}
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server: %v", err)
	}
	t.Cleanup(s.kill)
	if err := faketime.Set(setting, 0, rate); err != nil {
		t.Fatal(err)
	}
	return s
}
