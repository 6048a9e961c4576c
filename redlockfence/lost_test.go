package redlockfence_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// record is the key of the resource "{acct}"'s highest accepted token.
const record = redlockfence.TokenKeyPrefix + "{acct}"

// When the Redis guard's record of a resource is gone while the resource's data stays, a write
// of that data is refused with ErrFenceLost (not ErrStale: the current holder is refused too),
// whatever took the record: a DEL, eviction under allkeys-lru, or a restart without
// persistence after which the data came back. Without the refusal, the paused holder's lower
// token is accepted over the newer holder's data.
func TestRedisFenceLost(t *testing.T) {
	t.Run("deleted", func(t *testing.T) {
		eachRedis(t, func(t *testing.T, c *redis.Client) {
			overtaken(t, c)
			if err := c.Del(deadline(t), record).Err(); err != nil {
				t.Fatal(err)
			}
			staleRefused(t, c)
		})
	})
	t.Run("evicted", func(t *testing.T) {
		c := redistest.Client(t, redistest.Start(t, "--maxmemory-policy", "allkeys-lru", "--maxmemory-samples", "64").Addr)
		overtaken(t, c)
		evictRecord(t, c)
		staleRefused(t, c)
	})
	t.Run("restart without persistence, data restored", func(t *testing.T) {
		srv := redistest.Start(t)
		c := redistest.Client(t, srv.Addr)
		overtaken(t, c)
		srv.Restart(t)
		// The data comes back without its record, as a restore from a backup or a cache
		// refilled from a database would bring it.
		if err := c.Set(deadline(t), "{acct}:owner", "B", 0).Err(); err != nil {
			t.Fatal(err)
		}
		staleRefused(t, c)
	})
	t.Run("restart from a snapshot keeps both", func(t *testing.T) {
		srv := redistest.Start(t)
		c := redistest.Client(t, srv.Addr)
		overtaken(t, c)
		if err := c.Save(deadline(t)).Err(); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t)
		err := redlockfence.NewRedis(c).Set(deadline(t), "{acct}", 9, "{acct}:owner", "A", 0)
		if !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("A's write after a restart from a snapshot with B's: %v, want ErrStale", err)
		}
	})
}

// overtaken has holder B write "{acct}:owner" with token 10, over A's write with token 9.
func overtaken(t *testing.T, c *redis.Client) {
	t.Helper()
	g := redlockfence.NewRedis(c)
	for _, w := range []struct {
		token uint64
		owner string
	}{{9, "A"}, {10, "B"}} {
		if err := g.Set(deadline(t), "{acct}", w.token, "{acct}:owner", w.owner, 0); err != nil {
			t.Fatalf("%s's write: %v", w.owner, err)
		}
	}
}

// staleRefused checks, once the record is gone and B's data stays, that A's write with token 9,
// and then B's with token 10, are refused with ErrFenceLost, saying which key holds data, and
// that B's data stays.
func staleRefused(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := deadline(t)
	g := redlockfence.NewRedis(c)
	if n := c.Exists(ctx, record).Val(); n != 0 {
		t.Fatalf("the record is there")
	}
	for _, w := range []struct {
		token uint64
		owner string
	}{{9, "A"}, {10, "B"}} {
		err := g.Set(ctx, "{acct}", w.token, "{acct}:owner", w.owner, 0)
		if v, _ := get(t, c, "{acct}:owner"); v != "B" {
			t.Fatalf("%s's write with token %d after the record was lost: %v; {acct}:owner = %q, want B's write", w.owner, w.token, err, v)
		}
		if !errors.Is(err, redlockfence.ErrFenceLost) || errors.Is(err, redlockfence.ErrStale) ||
			!strings.Contains(err.Error(), `resource "{acct}"`) || !strings.Contains(err.Error(), `"{acct}:owner"`) {
			t.Fatalf("%s's write with token %d after the record was lost: %v, want ErrFenceLost naming the resource and the key", w.owner, w.token, err)
		}
		t.Logf("%s's write with token %d: %v", w.owner, w.token, err)
	}
}

// evictRecord fills c, a redis-server with allkeys-lru, until it evicts the record of "{acct}"
// and not "{acct}:owner": as when the record of a resource written an hour ago is evicted
// while its data, read since, stays. The record is made idle for an hour, and the filler keys
// for a minute, with RESTORE ... IDLETIME, so that the server evicts in that order.
func evictRecord(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := deadline(t)
	restoreIdle(t, c, record, 3600)
	if err := c.Set(ctx, "filler", strings.Repeat("x", 16<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	filler := c.Dump(ctx, "filler").Val()
	used, err := strconv.ParseInt(c.InfoMap(ctx, "memory").Item("Memory", "used_memory"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+1<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; c.Exists(ctx, record).Val() == 1; i++ {
		if i == 5000 {
			t.Fatalf("the record is still there after 5000 filler keys")
		}
		if err := c.Do(ctx, "RESTORE", "filler:"+strconv.Itoa(i), 0, filler, "IDLETIME", 60).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Exists(ctx, "{acct}:owner").Val(); n != 1 {
		t.Fatalf("the server evicted {acct}:owner")
	}
	t.Logf("evicted_keys %s, maxmemory %s: the record is evicted, {acct}:owner stays",
		c.InfoMap(ctx, "stats").Item("Stats", "evicted_keys"), c.InfoMap(ctx, "memory").Item("Memory", "maxmemory_human"))
}

// restoreIdle makes key look idle for seconds to the server's LRU.
func restoreIdle(t *testing.T, c *redis.Client, key string, seconds int) {
	t.Helper()
	ctx := deadline(t)
	v, err := c.Dump(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "RESTORE", key, 0, v, "REPLACE", "IDLETIME", seconds).Err(); err != nil {
		t.Fatal(err)
	}
}

// Data written before a resource's first guarded write is refused until its record is seeded;
// a record "0" lets any token pass. After ErrFenceLost, the token that an operator records,
// taken after every earlier holder's, lets later holders write and refuses earlier ones as
// stale.
func TestRedisFenceSeeded(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		if err := c.Set(ctx, "{stock}:n", 10, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := g.Set(ctx, "{stock}", 1, "{stock}:n", 9, 0); !errors.Is(err, redlockfence.ErrFenceLost) {
			t.Fatalf("a write of data loaded before any guarded write: %v, want ErrFenceLost", err)
		}
		if err := c.SetNX(ctx, redlockfence.TokenKeyPrefix+"{stock}", 0, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := g.Set(ctx, "{stock}", 1, "{stock}:n", 9, 0); err != nil {
			t.Fatalf("token 1 after the record was seeded with 0: %v", err)
		}

		overtaken(t, c)
		if err := c.Del(ctx, record).Err(); err != nil {
			t.Fatal(err)
		}
		if err := g.Set(ctx, "{acct}", 10, "{acct}:owner", "B", 0); !errors.Is(err, redlockfence.ErrFenceLost) {
			t.Fatalf("B's write after the record was deleted: %v, want ErrFenceLost", err)
		}
		if err := c.Set(ctx, record, 11, 0).Err(); err != nil { // the operator's, holding the lock with token 11
			t.Fatal(err)
		}
		if err := g.Set(ctx, "{acct}", 9, "{acct}:owner", "A", 0); !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("A's write after the operator recorded 11: %v, want ErrStale", err)
		}
		if err := g.Set(ctx, "{acct}", 12, "{acct}:owner", "C", 0); err != nil {
			t.Fatalf("token 12 after the operator recorded 11: %v", err)
		}
	})
}
