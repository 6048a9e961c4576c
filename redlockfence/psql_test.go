package redlockfence_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/internal/pgtest"
	"github.com/quorumlock/redlock/redlockfence"
)

// The psql script of docs/fencing.md, run as redlock exec --fence runs it, with the token in
// $REDLOCK_FENCE: it writes with a token not lower than the highest; a lower token, or none,
// stops psql before the write, with exit status 3.
func TestPsqlGuard(t *testing.T) {
	pgtest.Require(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skipf("psql not installed: %v", err)
	}
	dsn := postgresDSN(t)
	db := openPostgres(t, dsn)
	defer db.Close()
	s := store{redlockfence.Postgres, db}
	guard(t, s)
	s.exec(t, "CREATE TABLE releases (app TEXT PRIMARY KEY, version TEXT NOT NULL, fence BIGINT NOT NULL)",
		"INSERT INTO releases VALUES ('shop', 'v1', 0)")
	deploy := func(fence, version string) (string, error) {
		cmd := exec.Command(psql, dsn, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "version="+version, "-f", "testdata/deploy.sql")
		cmd.Env = os.Environ()
		if fence != "" {
			cmd.Env = append(cmd.Env, "REDLOCK_FENCE="+fence)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		fence, version string
		refused        string // what psql says when it refuses; "" when it writes
	}{
		{"1795486082860500", "v2", ""},
		{"1795486082860500", "v3", ""}, // the same holder again
		{"1795486082860499", "v4", `error: no rows returned for \gset`},
		{"", "v5", `syntax error at or near ":"`}, // without --fence: no token
	} {
		out, err := deploy(c.fence, c.version)
		var exit *exec.ExitError
		switch {
		case c.refused == "" && err != nil:
			t.Fatalf("token %s: %v: %s", c.fence, err, out)
		case c.refused != "" && (!strings.Contains(out, c.refused) || !errors.As(err, &exit) || exit.ExitCode() != 3):
			t.Fatalf("token %q: psql said %q (%v), want exit status 3 and %q", c.fence, out, err, c.refused)
		}
	}
	var version string
	if err := db.QueryRow("SELECT version FROM releases").Scan(&version); err != nil || version != "v3" {
		t.Fatalf("the release is %q, %v; want v3", version, err)
	}
}

// docs/fencing.md shows testdata/deploy.sql as it is.
func TestPsqlGuardInDocs(t *testing.T) {
	script, err := os.ReadFile("testdata/deploy.sql")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, script) {
		t.Fatalf("docs/fencing.md does not show testdata/deploy.sql as it is:\n%s", script)
	}
}
