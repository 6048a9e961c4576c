package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/faketime"
)

// StartOffset starts a redis-server like Start whose wall clock (TIME, and the expiry of its
// keys) reads offset away from the true time, through libfaketime; it keeps the offset across
// Restart. libfaketime missing fails t under make test and skips it elsewhere, as Require does.
func StartOffset(t testing.TB, offset time.Duration, args ...string) *Server {
	t.Helper()
	Require(t)
	lib, err := faketime.Find()
	if err != nil {
		require(t, err)
	}
	s := &Server{args: args, dir: t.TempDir()}
	setting := filepath.Join(t.TempDir(), "faketime")
	if err := os.WriteFile(setting, fmt.Appendf(nil, "%+.6f\n", offset.Seconds()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env = faketime.Env(lib, setting)
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}
