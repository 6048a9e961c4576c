package simulate

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/clock"
	"github.com/quorumlock/redlock/quorum"
)

// The majority semaphore's node scripts: holders in a sorted set scored by when each expires
// on the node's clock (the node refuses beyond the permits), as this module's semaphore keeps
// them, so that the quorum is the only difference between the two strategies.
var (
	majorityAdmit = redis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[3]) then
	return 0
end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`)
	majorityLeave = redis.NewScript(`return redis.call("ZREM", KEYS[1], ARGV[1])`)
)

// majority is MajoritySemaphore: it asks every node at once and holds the semaphore when a
// majority admitted it within the validity, else leaves every node and tries again after poll.
type majority struct {
	rdbs        []*redis.Client
	clock       *clientClock
	permits     string
	owner       string
	poll        time.Duration
	nodeTimeout time.Duration
	seq         int
}

func (m *majority) Lock(ctx context.Context, key string, ttl time.Duration) (holding, error) {
	for {
		m.seq++
		h := &majorityHolding{m: m, key: "semaphore:" + key, token: fmt.Sprintf("%s-%d", m.owner, m.seq)}
		start := m.clock.now()
		if m.admitted(ctx, h, ttl) >= quorum.Of(len(m.rdbs)) {
			if h.until = clock.Deadline(start, ttl, 0.01); m.clock.now().Before(h.until) {
				return h, nil
			}
		}
		h.Unlock(context.WithoutCancel(ctx))
		if err := m.clock.wait(ctx, m.poll); err != nil {
			return nil, err
		}
	}
}

// admitted asks every node to admit h and counts the nodes that did.
func (m *majority) admitted(ctx context.Context, h *majorityHolding, ttl time.Duration) int {
	ctx, cancel := context.WithTimeout(ctx, m.nodeTimeout)
	defer cancel()
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	var mu sync.Mutex
	var wg sync.WaitGroup
	yes := 0
	for _, rdb := range m.rdbs {
		wg.Go(func() {
			n, err := majorityAdmit.Run(ctx, rdb, []string{h.key}, h.token, ms, m.permits).Int()
			if err == nil && n == 1 {
				mu.Lock()
				yes++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return yes
}

func (m *majority) Close() error { return nil }

type majorityHolding struct {
	m          *majority
	key, token string
	until      time.Time
}

func (h *majorityHolding) Until() (time.Time, bool)                    { return h.until, true }
func (h *majorityHolding) Extend(context.Context, time.Duration) error { return errNoExtend }
func (h *majorityHolding) Fence() uint64                               { return 0 }

func (h *majorityHolding) Unlock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.m.nodeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, rdb := range h.m.rdbs {
		wg.Go(func() { majorityLeave.Run(ctx, rdb, []string{h.key}, h.token) })
	}
	wg.Wait()
	return nil
}
