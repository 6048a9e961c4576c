package redlockfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// sharded is a client of many servers, each a shard.
type sharded interface {
	ForEachShard(ctx context.Context, fn func(ctx context.Context, c *redis.Client) error) error
}

var (
	_ sharded = (*redis.ClusterClient)(nil)
	_ sharded = (*redis.Ring)(nil)
)

// CheckServer checks what the guard needs of the Redis it writes to: that the server never
// evicts a resource's record while its data stays, that is, no maxmemory, or a maxmemory-policy
// of noeviction or volatile-* (a record has no expiry, so volatile-* never evicts it). It
// returns nil when every server passes (each shard of a cluster or ring); otherwise an error
// that names each server with an allkeys-* policy, or says that the policy of a server is
// unknown when INFO memory fails there or lacks it (a managed service may refuse it). It reads
// the policy once and changes nothing: call it at start-up and log what it returns.
func (r *Redis) CheckServer(ctx context.Context) error {
	if r == nil || r.c == nil {
		return errors.New("redlockfence: nil Redis client")
	}
	shards, ok := r.c.(sharded)
	if !ok {
		return checkEviction(ctx, r.c, "")
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	err := shards.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		if err := checkEviction(ctx, c, c.Options().Addr+": "); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("redlockfence: the servers' eviction policies are unknown: %w", err))
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// checkEviction is CheckServer's check of one server, c; server names it in the error, before
// what follows "redlockfence: ".
func checkEviction(ctx context.Context, c redis.Cmdable, server string) error {
	info, err := c.InfoMap(ctx, "memory").Result()
	if err != nil {
		return fmt.Errorf("redlockfence: %sthe eviction policy is unknown: INFO memory: %w", server, err)
	}
	limit, policy := info["Memory"]["maxmemory"], info["Memory"]["maxmemory_policy"]
	switch {
	case limit == "" || policy == "":
		return fmt.Errorf("redlockfence: %sthe eviction policy is unknown: INFO memory gives no maxmemory or maxmemory_policy", server)
	case limit == "0" || !strings.HasPrefix(policy, "allkeys-"):
		return nil
	}
	return fmt.Errorf("redlockfence: %smaxmemory %s with maxmemory-policy %s: under memory pressure the server evicts any key, "+
		"a resource's record of its highest token too, while the resource's data stays; the guard then refuses writes "+
		"of that data (ErrFenceLost), but lets a stale holder write keys evicted with the record: set "+
		"maxmemory-policy noeviction or a volatile-* policy (docs/fencing.md)", server, info["Memory"]["maxmemory_human"], policy)
}
