package keyslot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":             12739, // CRC16/XMODEM check value 0x31C3
		"foo":                   12182,
		"bar":                   5061,
		"{user1000}.following":  Of("user1000"),
		"foo{}{bar}":            Of("foo{}{bar}"), // empty first tag: the whole key
		"foo{{bar}}zap":         Of("{bar"),
		"foo{bar}{zap}":         Of("bar"),
		"{user1000}.followers":  3443,
		"{user1000}.following2": 3443,
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestTagsCoverEverySlot(t *testing.T) {
	for s := range Slots {
		tag := Tag(s)
		if n, err := strconv.ParseUint(tag, 36, 64); err != nil || n >= 1<<20 {
			t.Fatalf("Tag(%d) = %q, not among the first 2^20 candidates that Place tries", s, tag)
		}
		if tag == "" || strings.ContainsAny(tag, "{}") || Of(tag) != s {
			t.Fatalf("Tag(%d) = %q, of slot %d", s, tag, Of(tag))
		}
	}
}

func TestPlace(t *testing.T) {
	// Three masters with a third of the slots each, as redistest.StartCluster makes them.
	owner := make([]string, Slots)
	for s := range owner {
		owner[s] = []string{"a", "b", "c"}[s*3/Slots]
	}
	votes, err := Place(owner, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range votes {
		if seen[v.Master] || owner[Of(v.Tag)] != v.Master || strings.ContainsAny(v.Tag, "{}") {
			t.Fatalf("votes %v: not one tag a master, each of its master's slot", votes)
		}
		seen[v.Master] = true
	}
	again, err := Place(owner, 3)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(votes) {
		t.Fatalf("placed %v, then %v", votes, again)
	}
	for _, n := range []int{0, -1, 4} {
		if _, err := Place(owner, n); err == nil {
			t.Errorf("Place(%d votes on 3 masters) did not fail", n)
		}
	}

	// Moving any one slot to another master changes at most one tag of the set.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		moved := slices.Clone(owner)
		s := rng.IntN(Slots)
		if i%2 == 0 { // a slot of the first candidates, the ones that matter
			s = Of(strconv.FormatUint(rng.Uint64N(64), 36))
		}
		moved[s] = []string{"a", "b", "c", "d"}[rng.IntN(4)]
		after, err := Place(moved, 3)
		if err != nil {
			t.Fatal(err)
		}
		changed := 0
		for _, v := range after {
			if !slices.ContainsFunc(votes, func(w Vote) bool { return w.Tag == v.Tag }) {
				changed++
			}
		}
		if changed > 1 {
			t.Fatalf("one moved slot changed %d tags: %v, then %v", changed, votes, after)
		}
	}
}
