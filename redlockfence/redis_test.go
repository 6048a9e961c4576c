package redlockfence_test

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// eachRedis runs fn in a subtest on miniredis and on a redis-server.
func eachRedis(t *testing.T, fn func(t *testing.T, c *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) { fn(t, redistest.Client(t, miniredis.RunT(t).Addr())) })
	t.Run("redis-server", func(t *testing.T) { fn(t, redistest.Client(t, redistest.Start(t).Addr)) })
}

// Set writes with a token not lower than the highest, the same token again too, and keeps the
// highest in redlockfence:RESOURCE; a lower token sets nothing. ttl 0 sets no expiry.
func TestRedisSet(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		for _, w := range []struct {
			token uint64
			value string
		}{{5, "five"}, {5, "five again"}, {7, "seven"}} {
			if err := g.Set(ctx, "{acct}", w.token, "{acct}:owner", w.value, 0); err != nil {
				t.Fatalf("token %d: %v", w.token, err)
			}
		}
		err := g.Set(ctx, "{acct}", 6, "{acct}:owner", "six", 0)
		if !errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), `resource "{acct}": token 6 is lower than 7`) {
			t.Fatalf("token 6 after 7: %v, want ErrStale saying so", err)
		}
		if v, ttl := get(t, c, "{acct}:owner"); v != "seven" || ttl != -1 {
			t.Fatalf("{acct}:owner = %q with ttl %v; want seven without expiry", v, ttl)
		}
		if v, ttl := get(t, c, "redlockfence:{acct}"); v != "7" || ttl != -1 {
			t.Fatalf("redlockfence:{acct} = %q with ttl %v; want 7 without expiry", v, ttl)
		}
		if err := g.Set(ctx, "{acct}", 8, "{acct}:session", 42, 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if v, ttl := get(t, c, "{acct}:session"); v != "42" || ttl <= 0 || ttl > 1500*time.Millisecond {
			t.Fatalf("{acct}:session = %q with ttl %v; want 42 expiring within 1.5s", v, ttl)
		}
		if err := g.Set(ctx, "{acct}", 9, "{acct}:owner", "nine", -time.Second); err == nil || errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("a negative ttl: %v", err)
		}
		if v, _ := get(t, c, "redlockfence:{acct}"); v != "8" {
			t.Fatalf("a refused call recorded its token: redlockfence:{acct} = %q, want 8", v)
		}
	})
}

// get returns key's value and ttl (-1 for none, -2 for no key).
func get(t *testing.T, c *redis.Client, key string) (string, time.Duration) {
	t.Helper()
	ctx := deadline(t)
	v, err := c.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v, ttl // go-redis gives -1 and -2 as they are
}

// Eval's script sees the caller's KEYS and ARGV, and Eval returns its reply; a script error is
// not ErrStale; a stale token runs nothing.
func TestRedisEval(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		got, err := g.Eval(ctx, "{r}", 3, "return {#KEYS, KEYS[1], KEYS[2], #ARGV, ARGV[1], ARGV[2], ARGV[3]}",
			[]string{"{r}:a", "{r}:b"}, "x", 7, "")
		want := []any{int64(2), "{r}:a", "{r}:b", int64(3), "x", "7", ""}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Eval = %#v, %v; want %#v", got, err, want)
		}
		if got, err := g.Eval(ctx, "{r}", 3, "return redis.call('INCR', KEYS[1])", []string{"{r}:n"}); got != int64(1) || err != nil {
			t.Fatalf("INCR: %#v, %v", got, err)
		}
		if got, err := g.Eval(ctx, "{r}", 3, "return false", nil); got != nil || err != nil {
			t.Fatalf("a nil reply: %#v, %v; want nil, nil", got, err)
		}
		for _, script := range []string{"return redis.error_reply('MINE refused')", "local x = nil\nreturn x.y", "return redis.call('NOSUCH')"} {
			if _, err := g.Eval(ctx, "{r}", 4, script, nil); err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.HasPrefix(err.Error(), "redlockfence: ") {
				t.Errorf("script %q: %v, want an error that is not ErrStale", script, err)
			}
		}
		_, err = g.Eval(ctx, "{r}", 2, "return redis.call('INCR', KEYS[1])", []string{"{r}:n"})
		if !errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), "lower than 4") {
			t.Fatalf("token 2 after 4: %v, want ErrStale", err)
		}
		if v, _ := get(t, c, "{r}:n"); v != "1" {
			t.Fatalf("a stale Eval ran its script: {r}:n = %q, want 1", v)
		}
	})
}

// An error in the caller's script names the script's own line.
func TestRedisEvalLineNumbers(t *testing.T) {
	c := redistest.Client(t, redistest.Start(t).Addr)
	g := redlockfence.NewRedis(c)
	_, err := g.Eval(deadline(t), "r", 1, "local a = 1\nlocal b = 2\nreturn nosuch.field\n", nil)
	if err == nil || !strings.Contains(err.Error(), ":3:") {
		t.Fatalf("an error on the script's line 3: %v", err)
	}
	// Redis 7 reads flags from a first line "#!lua"; the line stays first.
	got, err := g.Eval(deadline(t), "r", 1, "#!lua\nreturn ARGV[1]", nil, "shebang")
	if err != nil || got != "shebang" {
		t.Fatalf("a #!lua script: %#v, %v", got, err)
	}
}

// Tokens compare as integers to the last digit, beyond a float's precision.
func TestRedisLargeTokens(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		const above = 1<<53 + 1 // a float rounds it to 1<<53
		for _, c := range []struct {
			token uint64
			stale bool
		}{{9, false}, {above, false}, {1 << 53, true}, {math.MaxUint64, false}, {math.MaxUint64 - 1, true}} {
			err := g.Set(ctx, "big", c.token, "v", strconv.FormatUint(c.token, 10), 0)
			if errors.Is(err, redlockfence.ErrStale) != c.stale || (err != nil && !c.stale) {
				t.Fatalf("token %d: %v, want stale %v", c.token, err, c.stale)
			}
		}
	})
}

// Bad arguments and a token key that holds no token are errors, not ErrStale, and write
// nothing; token 0 says the lock was made without WithFencing.
func TestRedisBadArguments(t *testing.T) {
	c := redistest.Client(t, miniredis.RunT(t).Addr())
	ctx := deadline(t)
	g := redlockfence.NewRedis(c)
	for _, tc := range []struct {
		resource string
		token    uint64
		want     string
	}{{"r", 0, "without redlock.WithFencing"}, {"", 1, "empty resource"}} {
		if err := g.Set(ctx, tc.resource, tc.token, "k", "v", 0); err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%q, %d): %v, want %q", tc.resource, tc.token, err, tc.want)
		}
		if _, err := g.Eval(ctx, tc.resource, tc.token, "return 1", nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Eval(%q, %d): %v, want %q", tc.resource, tc.token, err, tc.want)
		}
	}
	c.Set(ctx, "redlockfence:garbled", "12a", 0)
	if err := g.Set(ctx, "garbled", 5, "k", "v", 0); err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), "does not hold a fencing token") {
		t.Errorf("a token key holding 12a: %v", err)
	}
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("bad calls wrote k")
	}
	if err := redlockfence.NewRedis(nil).Set(ctx, "r", 1, "k", "v", 0); err == nil {
		t.Error("Set through a nil client succeeded")
	}
}

// On a Redis Cluster, a key in the slot of the resource's hash tag is written; a key
// outside it is an error that says so, before anything is sent.
func TestRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	ctx := deadline(t)
	g := redlockfence.NewRedis(c)
	if err := g.Set(ctx, "{acct}", 3, "{acct}:balance", 100, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := g.Eval(ctx, "{acct}", 4, "return redis.call('INCRBY', KEYS[1], ARGV[1])", []string{"{acct}:balance"}, 5); err != nil || got != int64(105) {
		t.Fatalf("Eval on the cluster: %#v, %v", got, err)
	}
	if v, err := c.Get(ctx, "redlockfence:{acct}").Result(); err != nil || v != "4" {
		t.Fatalf("redlockfence:{acct} = %q, %v; want 4", v, err)
	}
	for _, keys := range [][]string{{"balance"}, {"{acct}:balance", "{other}:balance"}} {
		_, err := g.Eval(ctx, "{acct}", 5, "return 1", keys)
		if err == nil || !strings.Contains(err.Error(), "not in the hash slot") || strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("keys %q: %v, want an error naming the slot", keys, err)
		}
	}
	if err := g.Set(ctx, "acct", 5, "acct:balance", 1, 0); err == nil || !strings.Contains(err.Error(), "hash tag") {
		t.Errorf("a resource without a hash tag: %v", err)
	}
	if v, err := c.Get(ctx, "redlockfence:{acct}").Result(); err != nil || v != "4" {
		t.Fatalf("refused calls recorded a token: redlockfence:{acct} = %q (%v), want 4", v, err)
	}
}

// On a ring, keys must carry the resource's hash tag.
func TestRedisRing(t *testing.T) {
	r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": miniredis.RunT(t).Addr(), "b": miniredis.RunT(t).Addr()}})
	t.Cleanup(func() { r.Close() })
	ctx := deadline(t)
	g := redlockfence.NewRedis(r)
	if err := g.Set(ctx, "{acct}", 3, "{acct}:balance", 100, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Get(ctx, "{acct}:balance").Result(); err != nil || v != "100" {
		t.Fatalf("{acct}:balance through the ring: %q, %v", v, err)
	}
	if err := g.Set(ctx, "{acct}", 4, "balance", 1, 0); err == nil || !strings.Contains(err.Error(), "hash tag") {
		t.Errorf("a key without the tag: %v", err)
	}
}

// The guard's records are its own: a key under TokenKeyPrefix is an error before anything is
// sent, so that no write of one resource resets another's fence.
func TestRedisRefusesItsOwnKeys(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		if err := g.Set(ctx, "r2", 7, "r2:owner", "seven", 0); err != nil {
			t.Fatal(err)
		}
		r2 := redlockfence.TokenKeyPrefix + "r2"
		if err := g.Set(ctx, "r1", 5, r2, "1", 0); err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), "TokenKeyPrefix") {
			t.Errorf("Set of r2's record through r1: %v, want an error naming TokenKeyPrefix", err)
		}
		if _, err := g.Eval(ctx, "r1", 5, "return redis.call('SET', KEYS[2], ARGV[1])", []string{"r1:owner", r2}, "1"); err == nil || !strings.Contains(err.Error(), "TokenKeyPrefix") {
			t.Errorf("Eval on r2's record through r1: %v, want an error naming TokenKeyPrefix", err)
		}
		if v, _ := get(t, c, r2); v != "7" {
			t.Fatalf("r2's record is %q, want 7", v)
		}
		if n := c.Exists(ctx, redlockfence.TokenKeyPrefix+"r1").Val(); n != 0 {
			t.Fatalf("a refused call recorded r1's token")
		}
		if err := g.Set(ctx, "r2", 3, "r2:owner", "three", 0); !errors.Is(err, redlockfence.ErrStale) {
			t.Fatalf("r2 with token 3 after 7: %v, want ErrStale", err)
		}
	})
}

// A script's own error reply that reads like the guard's refusal is the script's error, not
// ErrStale, and its token is recorded: the guard's refusals carry a nonce of the call that
// the script does not see, not even in the global ARGV.
func TestRedisEvalImitatedRefusal(t *testing.T) {
	eachRedis(t, func(t *testing.T, c *redis.Client) {
		ctx := deadline(t)
		g := redlockfence.NewRedis(c)
		for i, script := range []string{
			"return redis.error_reply('REDLOCKFENCE_STALE 99')",
			"return redis.error_reply('REDLOCKFENCE ' .. tostring(_G.ARGV[2]) .. ' STALE 99')",
			"return redis.error_reply('REDLOCKFENCE ' .. tostring(_G.ARGV[2]) .. ' LOST {r}:k')",
		} {
			token := uint64(10 + i)
			_, err := g.Eval(ctx, "{r}", token, script, nil)
			if err == nil || errors.Is(err, redlockfence.ErrStale) || !strings.Contains(err.Error(), " 99") && !strings.Contains(err.Error(), "{r}:k") {
				t.Errorf("%s: %v, want the script's error", script, err)
			}
			if v, _ := get(t, c, redlockfence.TokenKeyPrefix+"{r}"); v != strconv.FormatUint(token, 10) {
				t.Errorf("%s: the record is %q, want %d", script, v, token)
			}
			t.Logf("%s: %v", script, err)
		}
	})
}
