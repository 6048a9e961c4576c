package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// Every script of every primitive touches keys of one Redis Cluster hash slot, whatever the key
// and the prefix: each companion key is named by keyslot.Companion.
func TestEveryScriptTouchesOneSlot(t *testing.T) {
	for _, prefix := range []string{"", "app:", "{tenant}:", "a}b:"} {
		rc := redis.NewClient(&redis.Options{})
		defer rc.Close()
		c, err := New([]redis.UniversalClient{rc}, WithKeyPrefix(prefix), WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"k", "{user:7}:profile", "a}b", "x{}y{z}", "{", "{}"} {
			sem, _ := c.Semaphore(key, 3)
			rw, _ := c.RWMutex(key)
			mutex := c.mutex(key)
			multi, err := c.multi([]string{key, "{" + keyslot.Hashed(prefix+key) + "}other"})
			if err != nil {
				t.Fatal(err)
			}
			for name, s := range map[string]*spec{"lock": &mutex, "semaphore": &sem.s, "read": &rw.read, "write": &rw.write} {
				for _, keys := range [][]string{s.acqKeys, s.extKeys, s.relKeys, {s.stored}} {
					for _, k := range keys {
						if keyslot.Of(k) != keyslot.Of(prefix+key) {
							t.Errorf("%s of %q (prefix %q): %q in slot %d, the key in %d", name, key, prefix, k, keyslot.Of(k), keyslot.Of(prefix+key))
						}
					}
				}
			}
			if len(multi.relKeys) != 4 {
				t.Fatalf("LockAll's release keys: %q", multi.relKeys)
			}
			for _, k := range multi.relKeys[2:] {
				if !strings.HasPrefix(k, "queue:") {
					t.Errorf("LockAll's queue %q", k)
				}
			}
		}
		c.Close()
	}
}

// With a node that is a Redis Cluster, LockAll of keys in different slots is an error that
// names them, and sends nothing; a common hash tag makes it valid.
func TestLockAllOnClusterNeedsOneSlot(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	c, err := New([]redis.UniversalClient{cc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.TryLockAll(context.Background(), []string{"stock", "invoice"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), `"stock" and "invoice" are in hash slots`) || !strings.Contains(err.Error(), "hash tag") {
		t.Fatalf("LockAll across slots: %v", err)
	}
	if _, err := c.multi([]string{"{order:7}:stock", "{order:7}:invoice"}); err != nil {
		t.Fatalf("one hash tag: %v", err)
	}
}
