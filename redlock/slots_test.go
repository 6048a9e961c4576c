package redlock

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// Every command of every primitive touches keys of one Redis Cluster hash slot, the lock key's,
// whatever the key and the prefix, so that it runs on a cluster node.
func TestEveryCommandTouchesOneSlot(t *testing.T) {
	for _, prefix := range []string{"", "app:", "{tenant}:", "a}b:"} {
		rc := redis.NewClient(&redis.Options{})
		defer rc.Close()
		c, err := New([]redis.UniversalClient{rc}, WithKeyPrefix(prefix), WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"k", "{user:7}:profile", "a}b", "x{}y{z}", "{", "{}"} {
			sem, err := c.Semaphore(key, 3)
			if err != nil {
				t.Fatal(err)
			}
			rw, err := c.RWMutex(key)
			if err != nil {
				t.Fatal(err)
			}
			multi, err := c.multi([]string{key, "{" + keyslot.Tag(keyslot.Of(prefix+key)) + "}other"})
			if err != nil {
				t.Fatal(err)
			}
			specs := map[string]*spec{"lock": c.mutex(key), "semaphore": sem.s, "read": rw.read, "write": rw.write, "multi": multi}
			for name, s := range specs {
				a := attempt{token: "t", ttl: time.Second, waiter: "w.1", place: 1, lease: time.Second}
				cmds := []command{s.ops.acquire(a), s.ops.extend("t", time.Second), s.ops.release("t", c.self.channel, "w.1")}
				if cmd, ok := s.ops.abandon("w.1", c.self.channel); ok {
					cmds = append(cmds, cmd)
				}
				for _, cmd := range cmds {
					for _, k := range cmd.Keys {
						if keyslot.Of(k) != keyslot.Of(prefix+key) {
							t.Errorf("%s of %q (prefix %q): %q in slot %d, the key in %d", name, key, prefix, k, keyslot.Of(k), keyslot.Of(prefix+key))
						}
					}
				}
			}
		}
		c.Close()
	}
}
