package keyslot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A Vote is one of the independent keys that redlock.NewCluster places on distinct masters of
// one cluster: every key of the vote starts with "{" + Tag + "}", so that it lives in the slot of
// Tag, which Master (an address) served when the topology was read.
type Vote struct {
	Tag    string
	Master string
}

// Votes reads which master serves each slot of cluster and places n votes on distinct masters
// (see Place).
func Votes(ctx context.Context, cluster *redis.ClusterClient, n int) ([]Vote, error) {
	owner, err := Owners(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's slots: %w", err)
	}
	return Place(owner[:], n)
}

// Owners returns the address of the master that serves each slot of cluster ("" for none), read
// with CLUSTER SHARDS, or on a server older than Redis 7, which has none, CLUSTER SLOTS.
func Owners(ctx context.Context, cluster redis.UniversalClient) (*[Slots]string, error) {
	var owner [Slots]string
	shards, err := cluster.ClusterShards(ctx).Result()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown subcommand") {
		return slotOwners(ctx, cluster)
	}
	if err != nil {
		return nil, err
	}
	for _, sh := range shards {
		master := ""
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				port := n.Port
				if port == 0 {
					port = n.TLSPort
				}
				master = net.JoinHostPort(n.Endpoint, strconv.FormatInt(port, 10))
			}
		}
		for _, r := range sh.Slots {
			for s := max(r.Start, 0); master != "" && s <= min(r.End, Slots-1); s++ {
				owner[s] = master
			}
		}
	}
	return &owner, nil
}

// slotOwners is Owners by CLUSTER SLOTS, deprecated since Redis 7 in favour of CLUSTER SHARDS.
func slotOwners(ctx context.Context, cluster redis.UniversalClient) (*[Slots]string, error) {
	ranges, err := cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	var owner [Slots]string
	for _, r := range ranges {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= Slots || r.Start > r.End {
			continue
		}
		for s := r.Start; s <= r.End; s++ {
			owner[s] = r.Nodes[0].Addr // the master comes first
		}
	}
	return &owner, nil
}

// Place returns n votes on distinct masters, owner[s] being the master that serves slot s (""
// when none does). The tags are the first strings of the sequence "0", "1", ..., "z", "10", ...
// (base 36, as Tag's) whose slots fall on masters not used yet, in that order: every process
// reading one topology places the votes alike, and moving one slot to another master changes
// at most one tag of the set.
func Place(owner []string, n int) ([]Vote, error) {
	if n < 1 {
		return nil, fmt.Errorf("%d votes: want at least 1", n)
	}
	if len(owner) != Slots {
		return nil, fmt.Errorf("a topology of %d slots, want %d", len(owner), Slots)
	}
	masters := map[string]bool{}
	for _, m := range owner {
		if m != "" {
			masters[m] = true
		}
	}
	if len(masters) < n {
		return nil, fmt.Errorf("%d votes need as many masters serving slots; the cluster has %d", n, len(masters))
	}
	votes := make([]Vote, 0, n)
	used := map[string]bool{}
	// Every slot has a tag among the first 2^20 candidates (Tag's table is built from them).
	for i := uint64(0); len(votes) < n && i < 1<<20; i++ {
		t := strconv.FormatUint(i, 36)
		if m := owner[Of(t)]; m != "" && !used[m] {
			used[m] = true
			votes = append(votes, Vote{Tag: t, Master: m})
		}
	}
	if len(votes) < n {
		return nil, errors.New("no tag found for every master") // cannot happen: see Tag
	}
	return votes, nil
}
