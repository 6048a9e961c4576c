package redlockfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// A Dialect is the SQL database a guard writes to.
type Dialect int

const (
	// Postgres is PostgreSQL (9.5 or later), through any database/sql driver that takes $1
	// placeholders (github.com/jackc/pgx/v5/stdlib, github.com/lib/pq).
	Postgres Dialect = iota
	// SQLite is SQLite (3.35 or later), through any database/sql driver that takes ?
	// placeholders (modernc.org/sqlite, github.com/mattn/go-sqlite3). Concurrent writers
	// need a busy timeout in the DSN: see docs/fencing.md.
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "Postgres"
	case SQLite:
		return "SQLite"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// tableName is what NewSQL takes for a table: an identifier, optionally after a schema's.
// Neither is ever quoted, so neither may need quoting.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// maxIdent is the longest identifier PostgreSQL keeps: a longer one is silently cut, which
// could make two names one table.
const maxIdent = 63

// A SQL guard keeps the highest token accepted for each resource in a table of two columns,
// resource (text, the primary key) and token (a 64-bit integer), and checks tokens within the
// caller's transactions. It is safe for concurrent use.
type SQL struct {
	db      *sql.DB
	create  string // the table, if not there
	record  string // the check: records a token not lower than the highest, returns it
	highest string // reads the highest token, to say in ErrStale's message
}

// NewSQL returns a guard over db, a database of dialect d, keeping its tokens in table:
// letters, digits and '_', not starting with a digit, at most 63 of them, optionally after a
// schema's name and a dot ("fences", "app.fences"). The name is never quoted, so it must not
// be a reserved word of the database either. Init creates the table.
func NewSQL(db *sql.DB, d Dialect, table string) (*SQL, error) {
	if db == nil {
		return nil, errors.New("redlockfence: nil *sql.DB")
	}
	if d != Postgres && d != SQLite {
		return nil, fmt.Errorf("redlockfence: unknown dialect %v: want Postgres or SQLite", d)
	}
	if !tableName.MatchString(table) || len(table) > 2*maxIdent+1 || longIdent(table) {
		return nil, fmt.Errorf("redlockfence: bad table name %q: want letters, digits and '_' (not first a digit, at most %d), optionally schema.table", table, maxIdent)
	}
	p1, p2 := "$1", "$2"
	if d == SQLite {
		p1, p2 = "?", "?"
	}
	return &SQL{
		db:     db,
		create: "CREATE TABLE IF NOT EXISTS " + table + " (resource TEXT NOT NULL PRIMARY KEY, token BIGINT NOT NULL)",
		// One statement: the upsert takes the row's lock, and the WHERE is evaluated on the
		// row's latest committed version; a refused token updates nothing and returns no row.
		record: "INSERT INTO " + table + " AS t (resource, token) VALUES (" + p1 + ", " + p2 + ")" +
			" ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE t.token <= excluded.token" +
			" RETURNING token",
		highest: "SELECT token FROM " + table + " WHERE resource = " + p1,
	}, nil
}

// longIdent reports whether a part of table, split at its dot, is longer than maxIdent.
func longIdent(table string) bool {
	for i, start := 0, 0; i <= len(table); i++ {
		if i == len(table) || table[i] == '.' {
			if i-start > maxIdent {
				return true
			}
			start = i + 1
		}
	}
	return false
}

// Init creates the guard's table if it does not exist.
func (s *SQL) Init(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, s.create); err != nil {
		return fmt.Errorf("redlockfence: create the table: %w", err)
	}
	return nil
}

// Check checks token for resource within tx, with one statement: when token is not lower than
// the highest recorded for resource (the same token may write again), it records token and
// returns nil; otherwise it returns an error wrapping ErrStale and records nothing. What tx
// writes after a nil Check commits or rolls back with the record, so a write is accepted
// exactly when its token is; nothing is recorded by a transaction that rolls back. After
// ErrStale, roll tx back.
//
// Token 0 is an error (not ErrStale): the lock was made without redlock.WithFencing. On
// PostgreSQL the check holds at the default isolation, READ COMMITTED, and at any higher one
// (where a concurrent writer of the same resource may get a serialization failure to retry);
// on SQLite, call Check before tx reads anything (see docs/fencing.md).
func (s *SQL) Check(ctx context.Context, tx *sql.Tx, resource string, token uint64) error {
	if tx == nil {
		return errors.New("redlockfence: nil *sql.Tx")
	}
	if err := checkArgs(resource, token, maxSQL); err != nil {
		return err
	}
	var recorded int64
	err := tx.QueryRowContext(ctx, s.record, resource, int64(token)).Scan(&recorded)
	if errors.Is(err, sql.ErrNoRows) {
		var highest int64
		if err := tx.QueryRowContext(ctx, s.highest, resource).Scan(&highest); err != nil {
			return fmt.Errorf("%w: resource %q: token %d refused (reading the highest: %v)", ErrStale, resource, token, err)
		}
		return stale(resource, token, strconv.FormatInt(highest, 10))
	}
	if err != nil {
		return fmt.Errorf("redlockfence: record token %d for resource %q: %w", token, resource, err)
	}
	return nil
}

// Do runs fn in a transaction of its own that Check has passed: it begins a transaction,
// checks token for resource, runs fn, and commits. On any error, fn's included, it rolls back,
// so nothing fn wrote and no token is recorded, and returns the error: ErrStale's, fn's as fn
// returned it, or the commit's. When ctx ended (database/sql then rolls the transaction back),
// the error wraps ctx.Err() too, so that errors.Is finds context.Canceled or
// context.DeadlineExceeded. A panic in fn rolls back too, and goes on to Do's caller.
func (s *SQL) Do(ctx context.Context, resource string, token uint64, fn func(tx *sql.Tx) error) error {
	if fn == nil {
		return errors.New("redlockfence: nil fn")
	}
	if err := checkArgs(resource, token, maxSQL); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("redlockfence: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	if err := s.Check(ctx, tx, resource, token); err != nil {
		return withEnded(ctx, err)
	}
	if err := fn(tx); err != nil {
		return withEnded(ctx, err)
	}
	committed = true // a failed Commit has ended the transaction too
	if err := tx.Commit(); err != nil {
		return withEnded(ctx, fmt.Errorf("redlockfence: commit: %w", err))
	}
	return nil
}

// withEnded returns err, wrapping ctx.Err() too when ctx has ended and err does not say so:
// database/sql rolls back a transaction whose context ended, and then its Commit, or a
// statement of fn's without that context, fails with sql.ErrTxDone, which does not say why.
func withEnded(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w: the transaction is rolled back)", err, cerr)
	}
	return err
}
