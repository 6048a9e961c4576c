package redlockfence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// NewSQL refuses what it cannot use, and a table name it would have to quote, before it
// touches the database.
func TestNewSQLRefuses(t *testing.T) {
	db := sqliteDB(t)
	long := strings.Repeat("a", 63)
	for _, table := range []string{"", "1fences", "fen-ces", "a.b.c", "fences;drop table x", `"fences"`,
		"fen ces", "fences.", ".fences", "fencés", long + "a", "s." + long + "a", long + "a.t"} {
		if _, err := redlockfence.NewSQL(db, redlockfence.SQLite, table); err == nil || !strings.Contains(err.Error(), "bad table name") {
			t.Errorf("NewSQL(%q) = %v, want a bad table name", table, err)
		}
	}
	for _, table := range []string{"fences", "_f1", "app.fences", long, long + "." + long} {
		if _, err := redlockfence.NewSQL(db, redlockfence.Postgres, table); err != nil {
			t.Errorf("NewSQL(%q): %v", table, err)
		}
	}
	if _, err := redlockfence.NewSQL(nil, redlockfence.SQLite, "fences"); err == nil {
		t.Error("NewSQL with a nil db succeeded")
	}
	if _, err := redlockfence.NewSQL(db, redlockfence.Dialect(7), "fences"); err == nil || !strings.Contains(err.Error(), "Dialect(7)") {
		t.Errorf("NewSQL with dialect 7: %v", err)
	}
	var tables int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("NewSQL touched the database: %d tables, %v", tables, err)
	}
}

// A token not lower than the highest writes, the same token again too; a lower one is
// refused with ErrStale, saying what was refused, and its write does not happen.
func TestSQLCheck(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		ctx := deadline(t)
		g := guard(t, s)
		if err := g.Init(ctx); err != nil {
			t.Fatalf("a second Init: %v", err)
		}
		s.exec(t, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)", "INSERT INTO acct VALUES (1, 'nobody')")
		write := func(token uint64, owner string) error {
			return g.Do(ctx, "acct", token, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, s.q("UPDATE acct SET owner = ? WHERE id = 1"), owner)
				return err
			})
		}
		for _, w := range []struct {
			token uint64
			owner string
		}{{5, "five"}, {5, "five again"}, {7, "seven"}} {
			if err := write(w.token, w.owner); err != nil {
				t.Fatalf("token %d: %v", w.token, err)
			}
		}
		err := write(6, "six")
		if !errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), `resource "acct": token 6 is lower than 7`) {
			t.Fatalf("token 6 after 7: %v, want ErrStale saying so", err)
		}
		if got := owner(t, s); got != "seven" || s.highest(t, "acct") != 7 {
			t.Fatalf("after the refusal: owner %q, highest %d; want seven, 7", got, s.highest(t, "acct"))
		}
		if err := g.Do(ctx, "other", 3, func(*sql.Tx) error { return nil }); err != nil {
			t.Fatalf("token 3 for another resource: %v", err)
		}
	})
}

func owner(t *testing.T, s store) string {
	t.Helper()
	var o string
	if err := s.db.QueryRowContext(deadline(t), "SELECT owner FROM acct WHERE id = 1").Scan(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

// Bad arguments are errors that are not ErrStale, and change nothing; token 0 says the lock
// was made without WithFencing.
func TestSQLBadArguments(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		ctx := deadline(t)
		g := guard(t, s)
		ran := false
		fn := func(*sql.Tx) error { ran = true; return nil }
		for _, c := range []struct {
			name     string
			resource string
			token    uint64
			fn       func(*sql.Tx) error
			want     string
		}{
			{"token 0", "r", 0, fn, "without redlock.WithFencing"},
			{"token above int64", "r", math.MaxInt64 + 1, fn, "larger than 9223372036854775807"},
			{"empty resource", "", 1, fn, "empty resource"},
			{"nil fn", "r", 1, nil, "nil fn"},
		} {
			err := g.Do(ctx, c.resource, c.token, c.fn)
			if err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: Do = %v, want an error saying %q", c.name, err, c.want)
			}
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := g.Check(ctx, tx, "r", 0); err == nil || !strings.Contains(err.Error(), "WithFencing") {
			t.Errorf("Check with token 0: %v", err)
		}
		if err := g.Check(ctx, nil, "r", 1); err == nil {
			t.Error("Check with a nil tx succeeded")
		}
		if ran || len(s.ints(t, "SELECT token FROM fences")) != 0 {
			t.Fatalf("bad arguments ran fn (%v) or recorded a token", ran)
		}
	})
}

// Nothing is recorded by a Check whose transaction rolls back, nor by a Do whose fn fails or
// panics; fn's error comes back as it is, and its writes are undone.
func TestSQLRollbackRecordsNothing(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		ctx := deadline(t)
		g := guard(t, s)
		s.exec(t, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)", "INSERT INTO acct VALUES (1, 'nobody')")
		if err := g.Do(ctx, "acct", 4, func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}

		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctx, tx, "acct", 9); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}

		mine := errors.New("payment declined")
		err = g.Do(ctx, "acct", 10, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, s.q("UPDATE acct SET owner = ? WHERE id = 1"), "ten"); err != nil {
				return err
			}
			return mine
		})
		if err != mine {
			t.Fatalf("Do returned %v, want fn's error as it is", err)
		}
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want fn's panic", r)
				}
			}()
			g.Do(ctx, "acct", 11, func(*sql.Tx) error { panic("boom") })
		}()
		if h, o := s.highest(t, "acct"), owner(t, s); h != 4 || o != "nobody" {
			t.Fatalf("after a rolled-back Check, a failed Do and a panicking one: highest %d, owner %q; want 4, nobody", h, o)
		}
		if err := g.Do(ctx, "acct", 5, func(*sql.Tx) error { return nil }); err != nil {
			t.Fatalf("token 5 after them: %v", err)
		}
	})
}

// Check joins the caller's transaction: the caller's write commits with the record, and a
// stale Check leaves the caller to roll back.
func TestSQLCheckInCallersTransaction(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		ctx := deadline(t)
		g := guard(t, s)
		s.exec(t, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)", "INSERT INTO acct VALUES (1, 'nobody')")
		write := func(token uint64, owner string) error {
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := g.Check(ctx, tx, "acct", token); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q("UPDATE acct SET owner = ? WHERE id = 1"), owner); err != nil {
				return err
			}
			return tx.Commit()
		}
		if err := write(8, "eight"); err != nil {
			t.Fatal(err)
		}
		if err := write(2, "two"); !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("token 2 after 8: %v", err)
		}
		if o := owner(t, s); o != "eight" {
			t.Fatalf("owner %q, want eight", o)
		}
	})
}

// The table may be named after a schema.
func TestSQLSchemaTable(t *testing.T) {
	ctx := context.Background()
	s := store{redlockfence.Postgres, postgresDB(t)}
	s.exec(t, "CREATE SCHEMA app")
	g, err := redlockfence.NewSQL(s.db, s.d, "app.fences")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Do(ctx, "r", 3, func(*sql.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := s.ints(t, "SELECT token FROM app.fences WHERE resource = 'r'"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("app.fences holds %v, want [3]", got)
	}
}

// A context that ends while fn runs ends Do with an error that errors.Is finds it in, and
// records nothing: whether fn returns its statement's error, or returns nil after
// database/sql rolled the transaction back, which Commit reports as ErrTxDone only.
func TestSQLDoContextEnded(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		g := guard(t, s)
		s.exec(t, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)", "INSERT INTO acct VALUES (1, 'nobody')")
		if err := g.Do(deadline(t), "acct", 4, func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for i, c := range []struct {
			name string
			want error
			ctx  func() (context.Context, context.CancelFunc)
			fn   func(t *testing.T, ctx context.Context, end func(), tx *sql.Tx) error
		}{
			{"cancelled, fn returns nil after the rollback", context.Canceled, cancellable, func(t *testing.T, _ context.Context, end func(), tx *sql.Tx) error {
				end()
				rolledBack(t, tx)
				return nil
			}},
			{"cancelled, fn returns the error of a tx.Exec after the rollback", context.Canceled, cancellable, func(t *testing.T, _ context.Context, end func(), tx *sql.Tx) error {
				end()
				rolledBack(t, tx)
				_, err := tx.Exec("UPDATE acct SET owner = 'late' WHERE id = 1") // ErrTxDone: Exec has no context to say why
				return err
			}},
			{"cancelled as fn returns", context.Canceled, cancellable, func(_ *testing.T, _ context.Context, end func(), _ *sql.Tx) error {
				end()
				return nil
			}},
			{"deadline passed, fn returns nil after the rollback", context.DeadlineExceeded, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(deadline(t), 50*time.Millisecond)
			}, func(t *testing.T, ctx context.Context, _ func(), tx *sql.Tx) error {
				redistest.Receive(t, "the context's deadline", ctx.Done())
				rolledBack(t, tx)
				return nil
			}},
		} {
			ctx, end := c.ctx()
			err := g.Do(ctx, "acct", uint64(5+i), func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, s.q("UPDATE acct SET owner = ? WHERE id = 1"), c.name); err != nil {
					return err
				}
				return c.fn(t, ctx, end, tx)
			})
			end()
			if !errors.Is(err, c.want) {
				t.Errorf("%s: Do = %v, want an error wrapping %v", c.name, err, c.want)
				continue
			}
			t.Logf("%s: %v", c.name, err)
		}
		if h, o := s.highest(t, "acct"), owner(t, s); h != 4 || o != "nobody" {
			t.Fatalf("after Do calls whose context ended: highest %d, owner %q; want 4, nobody", h, o)
		}
	})
}

func cancellable() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// rolledBack waits until database/sql has rolled tx back, as it does when tx's context ends.
func rolledBack(t *testing.T, tx *sql.Tx) {
	t.Helper()
	redistest.Eventually(t, "the transaction rolled back after its context ended", func() bool {
		_, err := tx.ExecContext(context.Background(), "SELECT 1")
		return errors.Is(err, sql.ErrTxDone)
	})
}
