package redlockfence_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockfence"
)

// resources are the three guarded resources of the end-to-end tests: a SQLite database, a
// PostgreSQL database and a Redis server that is none of the lock's nodes. Each keeps an
// account whose owner a lock holder writes, and a log of the tokens accepted, in commit order.
type resources struct {
	sql   []store // SQLite, PostgreSQL
	guard []*redlockfence.SQL
	rc    *redis.Client
	redis *redlockfence.Redis
}

// names are the resources' names, in the order of write's results.
var names = []string{"sqlite", "postgres", "redis"}

func newResources(t *testing.T) *resources {
	t.Helper()
	r := &resources{sql: []store{{redlockfence.SQLite, sqliteDB(t)}, {redlockfence.Postgres, postgresDB(t)}}}
	for _, s := range r.sql {
		r.guard = append(r.guard, guard(t, s))
		s.exec(t, "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)", "INSERT INTO acct VALUES (1, 'nobody')",
			"CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)", "INSERT INTO counter VALUES (1, 0)",
			"CREATE TABLE commits (n BIGINT PRIMARY KEY, token BIGINT NOT NULL)")
	}
	r.rc = redistest.Client(t, redistest.Start(t).Addr)
	r.redis = redlockfence.NewRedis(r.rc)
	return r
}

// write has owner write itself into every resource's account with token, and returns what
// each resource answered, in the order of names.
func (r *resources) write(ctx context.Context, token uint64, owner string) []error {
	var errs []error
	for i, s := range r.sql {
		errs = append(errs, r.guard[i].Do(ctx, "acct", token, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, s.q("UPDATE acct SET owner = ? WHERE id = 1"), owner); err != nil {
				return err
			}
			// The counter row's lock is held to the commit: the log is in commit order.
			var n int64
			if err := tx.QueryRowContext(ctx, "UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n").Scan(&n); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, s.q("INSERT INTO commits (n, token) VALUES (?, ?)"), n, int64(token))
			return err
		}))
	}
	_, err := r.redis.Eval(ctx, "{acct}", token, "redis.call('SET', KEYS[1], ARGV[1]) redis.call('RPUSH', KEYS[2], ARGV[2])",
		[]string{"{acct}:owner", "{acct}:commits"}, owner, token)
	return append(errs, err)
}

// owners returns each resource's account owner, in the order of names.
func (r *resources) owners(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, s := range r.sql {
		out = append(out, owner(t, s))
	}
	v, err := r.rc.Get(deadline(t), "{acct}:owner").Result()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, v)
}

// logs returns each resource's accepted tokens in commit order, in the order of names.
func (r *resources) logs(t *testing.T) [][]int64 {
	t.Helper()
	var out [][]int64
	for _, s := range r.sql {
		out = append(out, s.ints(t, "SELECT token FROM commits ORDER BY n"))
	}
	list, err := r.rc.LRange(deadline(t), "{acct}:commits", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int64, len(list))
	for i, v := range list {
		if tokens[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("{acct}:commits[%d]: %v", i, err)
		}
	}
	return append(out, tokens)
}

// lockClient returns a Client with fencing over its own connections to the nodes at addrs;
// t.Cleanup closes it.
func lockClient(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithFencing(), redlock.WithNodeTimeout(500 * time.Millisecond)}, opts...)
	c, err := redlock.New(redistest.Clients(t, addrs...), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
