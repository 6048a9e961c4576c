package redlockfence_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// BenchmarkWrite measures writes per second by one writer: a transaction that updates one row
// and commits, without the guard and through Do (the same transaction with the check first).
// SQLite is a file with the busy timeout of sqliteDSN, in its default rollback journal (a
// commit waits for the disk), and in WAL mode with synchronous=NORMAL (a commit does not);
// PostgreSQL is the tests' server, on loopback with fsync off.
func BenchmarkWrite(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *sql.DB
		d    redlockfence.Dialect
	}{
		{"sqlite", sqliteDB, redlockfence.SQLite},
		{"sqlite-wal", sqliteWAL, redlockfence.SQLite},
		{"postgres", postgresDB, redlockfence.Postgres},
	} {
		b.Run(d.name, func(b *testing.B) {
			s := store{d.d, d.open(b)}
			g := guard(b, s)
			s.exec(b, "CREATE TABLE acct (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)", "INSERT INTO acct VALUES (1, 0)")
			ctx := context.Background()
			write := func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "UPDATE acct SET n = n + 1 WHERE id = 1")
				return err
			}
			b.Run("plain", func(b *testing.B) {
				for b.Loop() {
					tx, err := s.db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := write(tx); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				perSecond(b)
			})
			b.Run("guarded", func(b *testing.B) {
				for b.Loop() {
					if err := g.Do(ctx, "acct", 1, write); err != nil {
						b.Fatal(err)
					}
				}
				perSecond(b)
			})
		})
	}
}

// BenchmarkRedisWrite measures SETs per second by one writer on a redis-server: a plain SET,
// and Set through the guard (a script: check, record, SET).
func BenchmarkRedisWrite(b *testing.B) {
	c := redistest.Client(b, redistest.Start(b).Addr)
	g := redlockfence.NewRedis(c)
	ctx := context.Background()
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := c.Set(ctx, "{acct}:owner", "B", 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b)
	})
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			if err := g.Set(ctx, "{acct}", 1, "{acct}:owner", "B", 0); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b)
	})
}

func perSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// sqliteWAL opens a new SQLite database in WAL mode with synchronous=NORMAL.
func sqliteWAL(t testing.TB) *sql.DB {
	t.Helper()
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "wal.db")) + "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
