package redlockfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/quorumlock/redlock/internal/pgtest"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if pg.srv != nil {
			pg.srv.Stop()
		}
		os.Exit(code)
	}))
}

// pg is the PostgreSQL server of the package's tests, started by the first test that needs
// it and stopped by TestMain; each test has a database of its own on it.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
	dbs  atomic.Int64
}

// A store is a SQL database of one dialect for one test.
type store struct {
	d  redlockfence.Dialect
	db *sql.DB
}

// q returns query, written with ? placeholders, in the store's dialect.
func (s store) q(query string) string {
	if s.d != redlockfence.Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// eachDialect runs fn in a subtest for SQLite and for PostgreSQL, each on a new database.
func eachDialect(t *testing.T, fn func(t *testing.T, s store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, store{redlockfence.SQLite, sqliteDB(t)}) })
	t.Run("postgres", func(t *testing.T) { fn(t, store{redlockfence.Postgres, postgresDB(t)}) })
}

// sqliteDSN is the DSN of a SQLite file at path as docs/fencing.md gives it: concurrent
// writers wait for each other up to 10 s instead of failing at once.
func sqliteDSN(path string) string { return "file:" + path + "?_pragma=busy_timeout(10000)" }

// sqliteDB opens a new SQLite database in a file of t's; t.Cleanup closes it.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "test.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDB creates a new database on the package's PostgreSQL server and opens it; t.Cleanup
// closes it.
func postgresDB(t testing.TB) *sql.DB {
	t.Helper()
	db := openPostgres(t, postgresDSN(t))
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDSN creates a new database on the package's PostgreSQL server and returns its DSN.
func postgresDSN(t testing.TB) string {
	t.Helper()
	pgtest.Require(t)
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Launch() })
	if pg.err != nil {
		t.Fatalf("start PostgreSQL: %v", pg.err)
	}
	name := fmt.Sprintf("test%d", pg.dbs.Add(1))
	admin := openPostgres(t, pg.srv.DSN)
	defer admin.Close()
	if _, err := admin.ExecContext(deadline(t), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pg.srv.DSN, "/postgres?", "/"+name+"?", 1)
}

func openPostgres(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// guard returns an initialised guard over s, in table "fences".
func guard(t testing.TB, s store) *redlockfence.SQL {
	t.Helper()
	g, err := redlockfence.NewSQL(s.db, s.d, "fences")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Init(deadline(t)); err != nil {
		t.Fatal(err)
	}
	return g
}

// exec runs statements on s, written with ? placeholders.
func (s store) exec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, st := range stmts {
		if _, err := s.db.ExecContext(deadline(t), s.q(st)); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// ints returns the integers query reads, one a row.
func (s store) ints(t testing.TB, query string, args ...any) []int64 {
	t.Helper()
	rows, err := s.db.QueryContext(deadline(t), s.q(query), args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// highest reads the token the guard's table keeps for resource; 0 when none.
func (s store) highest(t testing.TB, resource string) int64 {
	t.Helper()
	v := s.ints(t, "SELECT token FROM fences WHERE resource = ?", resource)
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

// deadline is the context of every call of a test: it fails in a minute, not at the
// package's timeout.
func deadline(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
