package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/quorumlock/redlock/redlockfence"
)

// A Store keeps the items for sale and the orders taken. An order presents its lock's fencing
// token (0 for none) on the read that decides it as well as on its write: once a later holder
// has read with a larger token, a paused holder's write is refused with
// redlockfence.ErrStale, whichever of the two writes first.
type Store interface {
	// Restock sets item's stock to n and forgets its orders.
	Restock(ctx context.Context, item string, n int) error
	// Left reads item's stock, recording fence with the read when it is not 0.
	Left(ctx context.Context, item string, fence uint64) (int, error)
	// Sell writes item's stock, left, and buyer's order, through the fencing guard with
	// fence when it is not 0.
	Sell(ctx context.Context, item string, fence uint64, left int, buyer string) error
	// Count reads the stock and counts the orders.
	Count(ctx context.Context, item string, initial int) (Report, error)
	OrderBook
}

// An OrderBook records the orders that forms submit (see Submissions).
type OrderBook interface {
	// Record records the order of the form whose one-time token is token.
	Record(ctx context.Context, token string) error
	// Recorded returns the tokens of the orders recorded, in order.
	Recorded(ctx context.Context) ([]string, error)
}

// resource is what a guard fences for item.
func resource(item string) string { return "seckill:" + item }

// SQLStore keeps the stock in table seckill_stock and the orders in seckill_orders of a
// SQLite or PostgreSQL database, and its tokens in seckill_fences.
type SQLStore struct {
	db    *sql.DB
	d     redlockfence.Dialect
	guard *redlockfence.SQL
}

// NewSQLStore makes the tables that are not there yet.
func NewSQLStore(ctx context.Context, db *sql.DB, d redlockfence.Dialect) (*SQLStore, error) {
	g, err := redlockfence.NewSQL(db, d, "seckill_fences")
	if err != nil {
		return nil, err
	}
	if err := g.Init(ctx); err != nil {
		return nil, err
	}
	s := &SQLStore{db: db, d: d, guard: g}
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS seckill_stock (item TEXT PRIMARY KEY, stock INTEGER NOT NULL)",
		"CREATE TABLE IF NOT EXISTS seckill_orders (item TEXT NOT NULL, buyer TEXT NOT NULL, fence BIGINT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS seckill_submitted (token TEXT PRIMARY KEY, at BIGINT NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// q returns query, written with ? placeholders, in the database's dialect.
func (s *SQLStore) q(query string) string {
	if s.d != redlockfence.Postgres {
		return query
	}
	parts := strings.Split(query, "?")
	for i := 1; i < len(parts); i++ {
		parts[i] = "$" + strconv.Itoa(i) + parts[i]
	}
	return strings.Join(parts, "")
}

// tx runs fn in a transaction: through the guard with fence, or a plain one for fence 0.
func (s *SQLStore) tx(ctx context.Context, item string, fence uint64, fn func(tx *sql.Tx) error) error {
	if fence != 0 {
		return s.guard.Do(ctx, resource(item), fence, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *SQLStore) Restock(ctx context.Context, item string, n int) error {
	return s.tx(ctx, item, 0, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM seckill_orders WHERE item = ?"), item); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO seckill_stock (item, stock) VALUES (?, ?) ON CONFLICT (item) DO UPDATE SET stock = excluded.stock"), item, n)
		return err
	})
}

func (s *SQLStore) Left(ctx context.Context, item string, fence uint64) (int, error) {
	var n int
	err := s.tx(ctx, item, fence, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, s.q("SELECT stock FROM seckill_stock WHERE item = ?"), item).Scan(&n)
	})
	return n, err
}

func (s *SQLStore) Sell(ctx context.Context, item string, fence uint64, left int, buyer string) error {
	return s.tx(ctx, item, fence, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("UPDATE seckill_stock SET stock = ? WHERE item = ?"), left, item); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO seckill_orders (item, buyer, fence) VALUES (?, ?, ?)"), item, buyer, int64(fence))
		return err
	})
}

func (s *SQLStore) Count(ctx context.Context, item string, initial int) (Report, error) {
	r := Report{Initial: initial}
	err := s.db.QueryRowContext(ctx, s.q("SELECT stock, (SELECT count(*) FROM seckill_orders WHERE item = ?) FROM seckill_stock WHERE item = ?"),
		item, item).Scan(&r.StockLeft, &r.Orders)
	r.Oversold = r.Orders - (initial - r.StockLeft)
	return r, err
}

func (s *SQLStore) Record(ctx context.Context, token string) error {
	// Once per token: a retry after a failure that may have written it records nothing more.
	_, err := s.db.ExecContext(ctx, s.q("INSERT INTO seckill_submitted (token, at) VALUES (?, ?) ON CONFLICT (token) DO NOTHING"),
		token, time.Now().UnixNano())
	return err
}

func (s *SQLStore) Recorded(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT token FROM seckill_submitted ORDER BY at")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tokens []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	return tokens, rows.Err()
}

// RedisStore keeps the stock in the key stock:ITEM, the orders in the list orders:ITEM and
// the orders of forms in the sorted set orders:submitted (scored by when they were recorded)
// of one Redis, none of the lock's nodes.
type RedisStore struct {
	c     redis.UniversalClient
	guard *redlockfence.Redis
}

func NewRedisStore(c redis.UniversalClient) *RedisStore {
	return &RedisStore{c: c, guard: redlockfence.NewRedis(c)}
}

func stockKey(item string) string  { return "stock:" + item }
func ordersKey(item string) string { return "orders:" + item }

func (s *RedisStore) Restock(ctx context.Context, item string, n int) error {
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		// The stock is written without a token: the guard refuses data it has no record for
		// (redlockfence.ErrFenceLost), so its record is seeded, with 0 unless it holds one.
		p.SetNX(ctx, redlockfence.TokenKeyPrefix+resource(item), 0, 0)
		p.Set(ctx, stockKey(item), n, 0)
		p.Del(ctx, ordersKey(item))
		return nil
	})
	return err
}

func (s *RedisStore) Left(ctx context.Context, item string, fence uint64) (int, error) {
	if fence == 0 {
		return s.c.Get(ctx, stockKey(item)).Int()
	}
	v, err := s.guard.Eval(ctx, resource(item), fence, "return redis.call('GET', KEYS[1])", []string{stockKey(item)})
	if err != nil {
		return 0, err
	}
	str, _ := v.(string)
	n, err := strconv.Atoi(str)
	if err != nil {
		return 0, fmt.Errorf("%s holds %v, not a number", stockKey(item), v)
	}
	return n, nil
}

func (s *RedisStore) Sell(ctx context.Context, item string, fence uint64, left int, buyer string) error {
	if fence == 0 {
		_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, stockKey(item), left, 0)
			p.RPush(ctx, ordersKey(item), buyer)
			return nil
		})
		return err
	}
	_, err := s.guard.Eval(ctx, resource(item), fence, "redis.call('SET', KEYS[1], ARGV[1]) redis.call('RPUSH', KEYS[2], ARGV[2])",
		[]string{stockKey(item), ordersKey(item)}, left, buyer)
	return err
}

func (s *RedisStore) Count(ctx context.Context, item string, initial int) (Report, error) {
	left, err := s.c.Get(ctx, stockKey(item)).Int()
	if err != nil {
		return Report{}, err
	}
	orders, err := s.c.LLen(ctx, ordersKey(item)).Result()
	if err != nil {
		return Report{}, err
	}
	r := Report{Initial: initial, StockLeft: left, Orders: int(orders)}
	r.Oversold = r.Orders - (initial - left)
	return r, nil
}

// submittedKey keeps the tokens of the orders that forms submitted.
const submittedKey = "orders:submitted"

func (s *RedisStore) Record(ctx context.Context, token string) error {
	// Once per token: a retry after a failure that may have written it records nothing more.
	return s.c.ZAddNX(ctx, submittedKey, redis.Z{Score: float64(time.Now().UnixMicro()), Member: token}).Err()
}

func (s *RedisStore) Recorded(ctx context.Context) ([]string, error) {
	return s.c.ZRange(ctx, submittedKey, 0, -1).Result()
}

// fenceKey is the context key of the fencing token of the lock an order holds.
type fenceKey struct{}

// withFence returns ctx carrying the fencing token of the lock held.
func withFence(ctx context.Context, fence uint64) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenceOf returns the fencing token ctx carries; 0 for none.
func fenceOf(ctx context.Context) uint64 {
	f, _ := ctx.Value(fenceKey{}).(uint64)
	return f
}

// openStore opens the stock that -store and -dsn name; close releases it.
func openStore(ctx context.Context, kind, dsn string) (st Store, close func(), err error) {
	switch kind {
	case "sqlite":
		return openSQL(ctx, "sqlite", redlockfence.SQLite, "file:"+dsn+"?_pragma=busy_timeout(5000)")
	case "postgres":
		if dsn == "" {
			return nil, nil, errors.New("-store postgres needs -dsn, such as postgres://user:password@127.0.0.1:5432/shop")
		}
		return openSQL(ctx, "pgx", redlockfence.Postgres, dsn)
	case "redis":
		if dsn == "" {
			return nil, nil, errors.New("-store redis needs -dsn, the address or URL of a Redis that is none of the lock's nodes")
		}
		cl, err := client(dsn)
		if err != nil {
			return nil, nil, err
		}
		return NewRedisStore(cl), func() { cl.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q: want sqlite, postgres or redis", kind)
}

func openSQL(ctx context.Context, driver string, d redlockfence.Dialect, dsn string) (Store, func(), error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	st, err := NewSQLStore(ctx, db, d)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return st, func() { db.Close() }, nil
}
