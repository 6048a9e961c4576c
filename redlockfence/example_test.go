package redlockfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlockfence"
)

// openSQLite opens a SQLite database in a new directory, with the busy timeout that
// concurrent writers need; remove it with os.RemoveAll(dir).
func openSQLite() (db *sql.DB, dir string) {
	dir, err := os.MkdirTemp("", "fence-example-")
	if err != nil {
		panic(err)
	}
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "shop.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		panic(err)
	}
	return db, dir
}

// shop opens a SQLite database like openSQLite, with a guard in table "fences" and the tables
// that setup makes; done closes and removes it all.
func shop(setup ...string) (db *sql.DB, fences *redlockfence.SQL, done func()) {
	db, dir := openSQLite()
	fences, err := redlockfence.NewSQL(db, redlockfence.SQLite, "fences")
	if err != nil {
		panic(err)
	}
	if err := fences.Init(context.Background()); err != nil {
		panic(err)
	}
	for _, stmt := range setup {
		if _, err := db.Exec(stmt); err != nil {
			panic(err)
		}
	}
	return db, fences, func() { db.Close(); os.RemoveAll(dir) }
}

// miniClient starts an in-memory Redis and returns a client of it; done stops both.
func miniClient() (c *redis.Client, done func()) {
	m := miniredis.NewMiniRedis()
	m.Start()
	c = redis.NewClient(&redis.Options{Addr: m.Addr()})
	return c, func() { c.Close(); m.Close() }
}

// A holder paused past its lock's validity writes after the next holder: the database
// refuses it. The lock is on three in-memory Redis nodes; their clocks are moved past the ttl
// to end A's lock, as a long pause of A would.
func Example() {
	ctx := context.Background()
	var nodes []redis.UniversalClient
	var minis []*miniredis.Miniredis
	for range 3 {
		m := miniredis.NewMiniRedis()
		m.Start()
		defer m.Close()
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		defer c.Close()
		minis, nodes = append(minis, m), append(nodes, c)
	}
	locks, err := redlock.New(nodes, redlock.WithFencing())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close()
	db, fences, done := shop("CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT)", "INSERT INTO acct VALUES (1, 'nobody')")
	defer done()
	setOwner := func(token uint64, owner string) error {
		return fences.Do(ctx, "acct", token, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE acct SET owner = ? WHERE id = 1", owner)
			return err
		})
	}

	a, err := locks.Lock(ctx, "acct", 10*time.Second)
	if err != nil {
		panic(err)
	}
	for _, m := range minis { // A is paused; its lock expires
		m.FastForward(11 * time.Second)
	}
	b, err := locks.Lock(ctx, "acct", 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("B's write:", setOwner(b.Fence(), "B"))
	err = setOwner(a.Fence(), "A") // A wakes up
	fmt.Println("A's write refused:", errors.Is(err, redlockfence.ErrStale))
	var owner string
	db.QueryRow("SELECT owner FROM acct").Scan(&owner)
	fmt.Println("owner:", owner)
	// Output:
	// B's write: <nil>
	// A's write refused: true
	// owner: B
}

func ExampleNewSQL() {
	db, dir := openSQLite()
	defer os.RemoveAll(dir)
	defer db.Close()
	_, err := redlockfence.NewSQL(db, redlockfence.SQLite, "fences; DROP TABLE acct")
	fmt.Println(err)
	fences, err := redlockfence.NewSQL(db, redlockfence.SQLite, "main.fences")
	fmt.Println(fences != nil, err)
	// Output:
	// redlockfence: bad table name "fences; DROP TABLE acct": want letters, digits and '_' (not first a digit, at most 63), optionally schema.table
	// true <nil>
}

func ExampleSQL_Init() {
	ctx := context.Background()
	db, dir := openSQLite()
	defer os.RemoveAll(dir)
	defer db.Close()
	fences, err := redlockfence.NewSQL(db, redlockfence.SQLite, "fences")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fences.Init(ctx))
	fmt.Println(fences.Init(ctx)) // the table is there: nothing to do
	var columns string
	db.QueryRow("SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('fences')").Scan(&columns)
	fmt.Println(columns)
	// Output:
	// <nil>
	// <nil>
	// resource TEXT, token BIGINT
}

// Check joins a transaction of the caller's, before its write.
func ExampleSQL_Check() {
	ctx := context.Background()
	db, fences, done := shop("CREATE TABLE stock (item TEXT PRIMARY KEY, n INTEGER)", "INSERT INTO stock VALUES ('sku-1', 10)")
	defer done()

	sell := func(token uint64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // after a Commit, does nothing
		if err := fences.Check(ctx, tx, "stock:sku-1", token); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE item = 'sku-1'"); err != nil {
			return err
		}
		return tx.Commit()
	}
	fmt.Println(sell(41))
	fmt.Println(sell(41)) // the same holder again
	fmt.Println(sell(40))
	fmt.Println(sell(0))
	var n int
	db.QueryRow("SELECT n FROM stock").Scan(&n)
	fmt.Println("left:", n)
	// Output:
	// <nil>
	// <nil>
	// redlockfence: stale fencing token: resource "stock:sku-1": token 40 is lower than 41, the highest accepted
	// redlockfence: fencing token 0: the lock was made without redlock.WithFencing, so it has no token to check
	// left: 8
}

// Do runs a transaction of its own; an error of fn rolls it back, the token's record with it.
func ExampleSQL_Do() {
	ctx := context.Background()
	db, fences, done := shop("CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER)", "INSERT INTO acct VALUES (1, 100)")
	defer done()

	withdraw := func(token uint64, amount int) error {
		return fences.Do(ctx, "acct:1", token, func(tx *sql.Tx) error {
			var balance int
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM acct WHERE id = 1").Scan(&balance); err != nil {
				return err
			}
			if balance < amount {
				return errors.New("insufficient funds")
			}
			_, err := tx.ExecContext(ctx, "UPDATE acct SET balance = ? WHERE id = 1", balance-amount)
			return err
		})
	}
	fmt.Println(withdraw(7, 30))
	fmt.Println(withdraw(9, 500)) // fails: token 9 is not recorded
	fmt.Println(withdraw(8, 30))
	fmt.Println(withdraw(6, 30))
	var balance int
	db.QueryRow("SELECT balance FROM acct").Scan(&balance)
	fmt.Println("balance:", balance)
	// Output:
	// <nil>
	// insufficient funds
	// <nil>
	// redlockfence: stale fencing token: resource "acct:1": token 6 is lower than 8, the highest accepted
	// balance: 40
}

func ExampleNewRedis() {
	c, done := miniClient()
	defer done()

	fences := redlockfence.NewRedis(c) // the Redis that keeps the resource, not a lock node
	fmt.Println(fences.Set(context.Background(), "{acct}", 12, "{acct}:owner", "B", 0))
	fmt.Println(c.Get(context.Background(), redlockfence.TokenKeyPrefix+"{acct}").Val())
	// Output:
	// <nil>
	// 12
}

func ExampleRedis_Set() {
	ctx := context.Background()
	c, done := miniClient()
	defer done()
	fences := redlockfence.NewRedis(c)

	fmt.Println(fences.Set(ctx, "{acct}", 12, "{acct}:owner", "B", 0))
	fmt.Println(fences.Set(ctx, "{acct}", 12, "{acct}:session", "s-1", time.Minute))
	fmt.Println(fences.Set(ctx, "{acct}", 11, "{acct}:owner", "A", 0))
	fmt.Println(c.Get(ctx, "{acct}:owner").Val(), c.TTL(ctx, "{acct}:session").Val())
	// Output:
	// <nil>
	// <nil>
	// redlockfence: stale fencing token: resource "{acct}": token 11 is lower than 12, the highest accepted
	// B 1m0s
}

// The script sees its own KEYS and ARGV; a stale token runs nothing.
func ExampleRedis_Eval() {
	ctx := context.Background()
	c, done := miniClient()
	defer done()
	fences := redlockfence.NewRedis(c)
	// The balance is loaded before any guarded write: its record is seeded with 0, which any
	// token passes (without it, the guard refuses the balance's writes with ErrFenceLost).
	c.SetNX(ctx, redlockfence.TokenKeyPrefix+"{acct}", 0, 0)
	c.Set(ctx, "{acct}:balance", 100, 0)

	const withdraw = `
local balance = tonumber(redis.call('GET', KEYS[1]))
if balance < tonumber(ARGV[1]) then
	return redis.error_reply('insufficient funds')
end
return redis.call('DECRBY', KEYS[1], ARGV[1])`
	keys := []string{"{acct}:balance"}
	fmt.Println(fences.Eval(ctx, "{acct}", 21, withdraw, keys, 30))
	fmt.Println(fences.Eval(ctx, "{acct}", 21, withdraw, keys, 500))
	fmt.Println(fences.Eval(ctx, "{acct}", 20, withdraw, keys, 30))
	// Output:
	// 70 <nil>
	// <nil> redlockfence: resource "{acct}": insufficient funds
	// <nil> redlockfence: stale fencing token: resource "{acct}": token 20 is lower than 21, the highest accepted
}

// A record lost while its data stays: every write of that data is refused, the current
// holder's too, until a token is recorded again.
func ExampleErrFenceLost() {
	ctx := context.Background()
	c, done := miniClient()
	defer done()
	fences := redlockfence.NewRedis(c)
	fences.Set(ctx, "{acct}", 12, "{acct}:owner", "B", 0)
	c.Del(ctx, redlockfence.TokenKeyPrefix+"{acct}") // as eviction would

	fmt.Println(fences.Set(ctx, "{acct}", 12, "{acct}:owner", "B again", 0))
	// An operator takes the lock, with token 13, and records it.
	c.Set(ctx, redlockfence.TokenKeyPrefix+"{acct}", 13, 0)
	fmt.Println(fences.Set(ctx, "{acct}", 12, "{acct}:owner", "B again", 0))
	fmt.Println(fences.Set(ctx, "{acct}", 14, "{acct}:owner", "C", 0))
	// Output:
	// redlockfence: fencing record lost: resource "{acct}": key "{acct}:owner" holds data but the record "redlockfence:{acct}" is not there (evicted, deleted, lost in a restart, or never seeded): a stale holder cannot be told from the current one, so nothing is written until the record holds a token no lower than any that wrote the data (0 if none did), or the resource's keys are deleted (docs/fencing.md)
	// redlockfence: stale fencing token: resource "{acct}": token 12 is lower than 13, the highest accepted
	// <nil>
}

// CheckServer says whether the server may evict a resource's record while its data stays.
// miniredis has no eviction, nor the INFO memory that says so.
func ExampleRedis_CheckServer() {
	c, done := miniClient()
	defer done()
	fences := redlockfence.NewRedis(c)
	if err := fences.CheckServer(context.Background()); err != nil {
		fmt.Println(err) // at start-up: a log line, not a reason to stop
	}
	// Output:
	// redlockfence: the eviction policy is unknown: INFO memory: section (memory) is not supported
}

func ExampleDialect() {
	fmt.Println(redlockfence.Postgres, redlockfence.SQLite, redlockfence.Dialect(2))
	// Output: Postgres SQLite Dialect(2)
}
