package redlockfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

const writers, rounds = 16, 25

// token is writer w's token in round r: writers w and w+8 share each token, and every token of
// round r is above every token of round r-1.
func token(w, r int) uint64 { return uint64(r*8 + w%8 + 1) }

// race has writers goroutines write rounds times each through write with their interleaved
// tokens, all of a round's writes released together. It counts the writes accepted and refused
// (ErrStale); any other error fails t.
func race(t *testing.T, write func(ctx context.Context, token uint64) error) (accepted, refused int64) {
	t.Helper()
	ctx := deadline(t)
	var acc, ref atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	var barrier [rounds]sync.WaitGroup // one-shot: each writer says it is ready, then waits for all
	for r := range barrier {
		barrier[r].Add(writers)
	}
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				barrier[r].Done()
				barrier[r].Wait()
				switch err := write(ctx, token(w, r)); {
				case err == nil:
					acc.Add(1)
				case errors.Is(err, redlockfence.ErrStale):
					ref.Add(1)
				default:
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return acc.Load(), ref.Load()
}

// checkOrder fails t when the accepted tokens, in commit order, decrease, or their count is
// not accepted.
func checkOrder(t *testing.T, committed []int64, accepted, refused int64) {
	t.Helper()
	t.Logf("%d writes of %d writers: %d accepted, %d refused as stale", writers*rounds, writers, accepted, refused)
	if int64(len(committed)) != accepted {
		t.Fatalf("%d writes committed, %d accepted", len(committed), accepted)
	}
	for i := 1; i < len(committed); i++ {
		if committed[i] < committed[i-1] {
			t.Fatalf("commit %d has token %d after token %d: the resource accepted a lower token after a higher one (commits %v)",
				i+1, committed[i], committed[i-1], committed)
		}
	}
}

// checkTop fails t when the last commit is not of the highest token of the race, which nothing
// can refuse.
func checkTop(t *testing.T, committed []int64) {
	t.Helper()
	if top := int64(token(7, rounds-1)); len(committed) == 0 || committed[len(committed)-1] != top {
		t.Fatalf("the last commit is not the highest token, %d: %v", top, committed)
	}
}

// 16 writers with interleaved tokens against one row: in commit order (read from a log
// table that every write appends to as its transaction's last statement, after taking a
// counter row's lock, so that the log's order is the order of commits), the accepted tokens
// never decrease. On PostgreSQL at its default isolation, READ COMMITTED; on SQLite with a
// busy timeout.
func TestSQLConcurrentWriters(t *testing.T) {
	eachDialect(t, func(t *testing.T, s store) {
		g := guard(t, s)
		s.exec(t, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)", "INSERT INTO counter VALUES (1, 0)",
			"CREATE TABLE commits (n BIGINT PRIMARY KEY, token BIGINT NOT NULL)")
		accepted, refused := race(t, func(ctx context.Context, token uint64) error {
			return g.Do(ctx, "stock", token, func(tx *sql.Tx) error {
				var n int64
				if err := tx.QueryRowContext(ctx, "UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n").Scan(&n); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, s.q("INSERT INTO commits (n, token) VALUES (?, ?)"), n, int64(token))
				return err
			})
		})
		committed := s.ints(t, "SELECT token FROM commits ORDER BY n")
		checkOrder(t, committed, accepted, refused)
		checkTop(t, committed)
		if err := g.Do(deadline(t), "stock", 1, func(*sql.Tx) error { return nil }); !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("token 1 after the race: %v, want ErrStale", err)
		}
	})
}

// The same on Redis: the script appends each accepted token to a list, in the order the
// server ran the scripts.
func TestRedisConcurrentWriters(t *testing.T) {
	c := redistest.Client(t, redistest.Start(t).Addr)
	g := redlockfence.NewRedis(c)
	const log = "return redis.call('RPUSH', KEYS[1], ARGV[1])"
	accepted, refused := race(t, func(ctx context.Context, token uint64) error {
		_, err := g.Eval(ctx, "{stock}", token, log, []string{"{stock}:commits"}, token)
		return err
	})
	list, err := c.LRange(deadline(t), "{stock}:commits", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	committed := make([]int64, len(list))
	for i, v := range list {
		if committed[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("{stock}:commits[%d]: %v", i, err)
		}
	}
	checkOrder(t, committed, accepted, refused)
	checkTop(t, committed)
	if _, err := g.Eval(deadline(t), "{stock}", 1, log, []string{"{stock}:commits"}, 1); !errors.Is(err, redlockfence.ErrStale) {
		t.Fatalf("token 1 after the race: %v, want ErrStale", err)
	}
}

// At SERIALIZABLE, PostgreSQL fails some of the concurrent writers with a serialization
// failure (SQLSTATE 40001), for the caller to retry; the accepted tokens still never decrease.
func TestPostgresSerializable(t *testing.T) {
	s := store{redlockfence.Postgres, postgresDB(t)}
	g := guard(t, s)
	s.exec(t, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)", "INSERT INTO counter VALUES (1, 0)",
		"CREATE TABLE commits (n BIGINT PRIMARY KEY, token BIGINT NOT NULL)")
	var failed atomic.Int64
	accepted, refused := race(t, func(ctx context.Context, token uint64) error {
		err := serializable(ctx, s, g, token)
		if pgerr := (*pgconn.PgError)(nil); errors.As(err, &pgerr) && pgerr.Code == "40001" {
			failed.Add(1)
			return redlockfence.ErrStale // counted with the refused: neither wrote
		}
		return err
	})
	t.Logf("%d of the writes not accepted were serialization failures", failed.Load())
	checkOrder(t, s.ints(t, "SELECT token FROM commits ORDER BY n"), accepted, refused)
}

// serializable writes token through Check in a SERIALIZABLE transaction.
func serializable(ctx context.Context, s store, g *redlockfence.SQL, token uint64) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := g.Check(ctx, tx, "stock", token); err != nil {
		return err
	}
	var n int64
	if err := tx.QueryRowContext(ctx, "UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n").Scan(&n); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO commits (n, token) VALUES ($1, $2)", n, int64(token)); err != nil {
		return err
	}
	return tx.Commit()
}
