package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// StartACL starts a redis-server on a free loopback port that serves only user, with password
// pass and every command and key allowed; the default user is off, so a client without these
// credentials can do nothing, not even PING. t.Cleanup kills it. args are extra options as for
// Start; Pause, Resume, Kill and Restart work as for Start.
func StartACL(t testing.TB, user, pass string, args ...string) *Server {
	t.Helper()
	Require(t)
	acl := []string{"--user", user, "on", ">" + pass, "~*", "&*", "+@all", "--user", "default", "off"}
	s := &Server{args: append(acl, args...), dir: t.TempDir(), user: user, pass: pass}
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server with ACL: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// ACLClient returns a go-redis client for addr logged in as user, with go-redis's defaults
// otherwise; t.Cleanup closes it.
func ACLClient(t testing.TB, addr, user, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     addr,
		Username:                 user,
		Password:                 pass,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// StartRestricted starts a redis-server like StartACL whose user may touch only the keys that
// match the ACL pattern keys and the channels that match channels, such as "app:*": every
// command on anything else fails with NOPERM.
func StartRestricted(t testing.TB, user, pass, keys, channels string) *Server {
	t.Helper()
	Require(t)
	acl := []string{"--user", user, "on", ">" + pass, "~" + keys, "&" + channels, "+@all", "--user", "default", "off"}
	s := &Server{args: acl, dir: t.TempDir(), user: user, pass: pass}
	if err := s.listen(); err != nil {
		t.Fatalf("redistest: start redis-server with a restricted user: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}
