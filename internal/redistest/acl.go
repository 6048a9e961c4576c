package redistest

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/redlock/internal/wire"
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

// An ACLKind is one kind of key or channel that the library touches under a prefix, as its
// naming gives them: the ACL pattern that allows it alone, and what the server's refusal of a
// dry run of it quotes.
type ACLKind struct{ Pattern, Quoted string }

// ACLKinds returns every kind of key and channel the library touches under prefix: the lock
// keys ("~app:[^~]*"), one kind of companion each ("~app:~redlock:queue:*", ...), and the two
// channels. They come from wire.Names, as the doctor's dry runs do.
func ACLKinds(t testing.TB, prefix string) []ACLKind {
	t.Helper()
	names, err := wire.NewNames(prefix)
	if err != nil {
		t.Fatal(err)
	}
	ks := []ACLKind{{"~" + prefix + "[^~]*", "'" + prefix + "doctor'"}}
	for _, name := range names.Every("k") {
		rest, ok := strings.CutPrefix(name, prefix+wire.Reserved)
		if !ok {
			continue // the lock key
		}
		head := prefix + wire.Reserved + rest[:strings.IndexByte(rest, ':')+1]
		ks = append(ks, ACLKind{"~" + head + "*", "'" + head})
	}
	for _, ch := range names.Channels("ID") {
		if c, ok := strings.CutSuffix(ch, "ID"); ok {
			ks = append(ks, ACLKind{"&" + c + "*", "'" + c})
		} else {
			ks = append(ks, ACLKind{"&" + ch, "'" + ch + "'"})
		}
	}
	return ks
}

// ACLPatterns returns the patterns of ks, but for the one at skip (-1: none).
func ACLPatterns(ks []ACLKind, skip int) []string {
	var ps []string
	for i, k := range ks {
		if i != skip {
			ps = append(ps, k.Pattern)
		}
	}
	return ps
}

// AddUser makes an ACL user on the server at addr, with the password "s3cret" and rules (ACL
// SETUSER), and returns a client logged in as it.
func AddUser(t testing.TB, addr, user string, rules ...string) *redis.Client {
	t.Helper()
	args := []any{"ACL", "SETUSER", user, "on", ">s3cret"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := Client(t, addr).Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s %q: %v", user, rules, err)
	}
	return ACLClient(t, addr, user, "s3cret")
}
