package doctor_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/redlock/doctor"
)

// A user that lacks the pattern of one kind of key or channel the library touches fails the
// acl check, which quotes that key or channel; one with a pattern for each kind passes, and so
// does one with the prefix's keys and channels, as the doctor advises.
func TestCheckACLCoversEveryKeyAndChannel(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ks := redistest.ACLKinds(t, "app:")
	check := func(t *testing.T, node *redis.Client) doctor.Checkup {
		t.Helper()
		return checkNodes(t, 100*time.Millisecond, []redis.UniversalClient{node}, doctor.Setup{KeyPrefix: "app:"})
	}
	for i, k := range ks {
		t.Run("without "+k.Pattern, func(t *testing.T) {
			t.Parallel()
			node := redistest.AddUser(t, s.Addr, "u"+string(rune('a'+i)), append(redistest.ACLPatterns(ks, i), "+@all")...)
			expect(t, check(t, node), 0, "acl", doctor.Fail, "is refused", k.Quoted, "~app:* and channels &app:*")
		})
	}
	t.Run("every kind", func(t *testing.T) {
		t.Parallel()
		node := redistest.AddUser(t, s.Addr, "kinds", append(redistest.ACLPatterns(ks, -1), "+@all")...)
		expect(t, check(t, node), 0, "acl", doctor.OK, `user kinds may run every command the library sends`)
	})
	t.Run("the prefix", func(t *testing.T) {
		t.Parallel()
		node := redistest.AddUser(t, s.Addr, "prefix", "~app:*", "&app:*", "+@all")
		expect(t, check(t, node), 0, "acl", doctor.OK, `user prefix may run every command the library sends on each kind of key (17) and channel (2) it touches, all "app:*"`)
	})
}
