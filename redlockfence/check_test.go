package redlockfence_test

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlockfence"
)

// CheckServer passes a redis-server that never evicts a key without an expiry, and names one
// with an allkeys-* policy, on its own and as a shard of a ring; where INFO memory fails
// (miniredis), it says the policy is unknown.
func TestRedisCheckServer(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the error; "" for nil
	}{
		{nil, ""},
		{[]string{"--maxmemory-policy", "allkeys-lru"}, ""}, // no maxmemory: nothing is evicted
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "noeviction"}, ""},
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "volatile-lru"}, ""},
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"}, "maxmemory 10.00M with maxmemory-policy allkeys-lru"},
		{[]string{"--maxmemory", "10mb", "--maxmemory-policy", "allkeys-random"}, "with maxmemory-policy allkeys-random"},
	} {
		err := redlockfence.NewRedis(redistest.Client(t, redistest.Start(t, c.args...).Addr)).CheckServer(deadline(t))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}

	good, bad := redistest.Start(t), redistest.Start(t, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lfu")
	r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"good": good.Addr, "bad": bad.Addr}})
	t.Cleanup(func() { r.Close() })
	err := redlockfence.NewRedis(r).CheckServer(deadline(t))
	if err == nil || !strings.Contains(err.Error(), "redlockfence: "+bad.Addr+": maxmemory 10.00M with maxmemory-policy allkeys-lfu") || strings.Contains(err.Error(), good.Addr) {
		t.Errorf("a ring with a shard on allkeys-lfu: %v", err)
	}
	t.Logf("a ring with a shard on allkeys-lfu: %v", err)

	err = redlockfence.NewRedis(redistest.Client(t, miniredis.RunT(t).Addr())).CheckServer(deadline(t))
	if err == nil || !strings.Contains(err.Error(), "the eviction policy is unknown") {
		t.Errorf("miniredis: %v, want the policy unknown", err)
	}
}
