package pgtest_test

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/pgtest"
)

// A started server answers a query on its DSN; once its test ends it is gone, with its
// directory.
func TestStart(t *testing.T) {
	var s *pgtest.Server
	t.Run("running", func(t *testing.T) {
		s = pgtest.Start(t)
		psql, err := exec.LookPath("psql")
		if err != nil {
			t.Skipf("psql not installed: %v", err)
		}
		out, err := exec.Command(psql, "-X", "-A", "-t", "-c", "select 6 * 7", s.DSN).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "42" {
			t.Fatalf("psql %s: %v: %s", s.DSN, err, out)
		}
	})
	if s == nil {
		return
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("the server on %s still accepts connections after its test ended", addr)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("the server's directory %s is still there: %v", s.Dir, err)
	}
}
