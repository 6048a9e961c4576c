package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/internal/wire"
	"github.com/quorumlock/redlock/redlock"
)

// A kind is one kind of key or channel that the library touches under a prefix, as its naming
// gives them: the ACL pattern that allows it alone, and what the server's refusal of the
// doctor's dry run quotes.
type kind struct{ pattern, quoted string }

// kinds returns every kind of key and channel the library touches under prefix: the lock keys
// ("~app:[^~]*"), one kind of companion each ("~app:~redlock:queue:*", ...), and the two
// channels. They come from wire.Names, as the doctor's dry runs do.
func kinds(t *testing.T, prefix string) []kind {
	t.Helper()
	names, err := wire.NewNames(prefix)
	if err != nil {
		t.Fatal(err)
	}
	ks := []kind{{"~" + prefix + "[^~]*", "'" + prefix + "doctor'"}}
	for _, name := range names.Every("k") {
		rest, ok := strings.CutPrefix(name, prefix+wire.Reserved)
		if !ok {
			continue // the lock key
		}
		head := prefix + wire.Reserved + rest[:strings.IndexByte(rest, ':')+1]
		ks = append(ks, kind{"~" + head + "*", "'" + head})
	}
	for _, ch := range names.Channels("ID") {
		if c, ok := strings.CutSuffix(ch, "ID"); ok {
			ks = append(ks, kind{"&" + c + "*", "'" + c})
		} else {
			ks = append(ks, kind{"&" + ch, "'" + ch + "'"})
		}
	}
	return ks
}

// patterns returns the patterns of ks, but for the one at skip (-1: none).
func patterns(ks []kind, skip int) []string {
	var ps []string
	for i, k := range ks {
		if i != skip {
			ps = append(ps, k.pattern)
		}
	}
	return ps
}

// addUser makes an ACL user on the server at addr, with the password "s3cret" and rules (ACL
// SETUSER), and returns a client logged in as it.
func addUser(t *testing.T, addr, user string, rules ...string) *redis.Client {
	t.Helper()
	args := []any{"ACL", "SETUSER", user, "on", ">s3cret"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := redistest.Client(t, addr).Do(deadline(t), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s %q: %v", user, rules, err)
	}
	return redistest.ACLClient(t, addr, user, "s3cret")
}

// A user that lacks the pattern of one kind of key or channel the library touches fails the
// acl check, which quotes that key or channel; one with a pattern for each kind passes, and so
// does one with the prefix's keys and channels, as the doctor advises.
func TestCheckACLCoversEveryKeyAndChannel(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ks := kinds(t, "app:")
	check := func(t *testing.T, node *redis.Client) redlock.Checkup {
		t.Helper()
		return checkNodes(t, 100*time.Millisecond, []redis.UniversalClient{node}, redlock.WithKeyPrefix("app:"))
	}
	for i, k := range ks {
		t.Run("without "+k.pattern, func(t *testing.T) {
			t.Parallel()
			node := addUser(t, s.Addr, "u"+string(rune('a'+i)), append(patterns(ks, i), "+@all")...)
			expect(t, check(t, node), 0, "acl", redlock.Fail, "is refused", k.quoted, "~app:* and channels &app:*")
		})
	}
	t.Run("every kind", func(t *testing.T) {
		t.Parallel()
		node := addUser(t, s.Addr, "kinds", append(patterns(ks, -1), "+@all")...)
		expect(t, check(t, node), 0, "acl", redlock.OK, `user kinds may run every command the library sends`)
	})
	t.Run("the prefix", func(t *testing.T) {
		t.Parallel()
		node := addUser(t, s.Addr, "prefix", "~app:*", "&app:*", "+@all")
		expect(t, check(t, node), 0, "acl", redlock.OK, `user prefix may run every command the library sends on each kind of key (13) and channel (2) it touches, all "app:*"`)
	})
}

// The kinds that the doctor's dry runs cover are every key and channel the library touches:
// every primitive runs, its waits woken by announcements alone, for a user allowed those
// kinds only, and no command but those the doctor checks (and what a connection needs).
func TestACLOfTheDoctorRunsEveryPrimitive(t *testing.T) {
	t.Parallel()
	rules := append(patterns(kinds(t, "app:"), -1), "-@all", "+@connection", "+unsubscribe")
	for _, cmd := range []string{"EVALSHA", "EVAL", "SET", "PUBLISH", "SUBSCRIBE", "TIME", "DEL", "EXISTS", "GET", "PEXPIRE",
		"PTTL", "ZADD", "ZCARD", "ZRANGE", "ZRANGEBYSCORE", "ZRANK", "ZREM", "ZREMRANGEBYSCORE", "ZSCORE"} {
		rules = append(rules, "+"+strings.ToLower(cmd))
	}
	ss := redistest.StartN(t, 3)
	client := func() *redlock.Client {
		nodes := make([]redis.UniversalClient, len(ss))
		for i, s := range ss {
			nodes[i] = addUser(t, s.Addr, "app", rules...)
		}
		c, err := redlock.New(nodes, redlock.WithKeyPrefix("app:"), redlock.WithFencing(), redlock.WithNodeTimeout(2*time.Second),
			redlock.WithRetryDelay(time.Hour, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c1, c2 := client(), client()
	testPrimitivesOn(t, c1, c2, "orders")
	ctx := deadline(t)
	l, err := c1.Lock(ctx, "orders", 10*time.Second)
	if err != nil || l.Fence() == 0 {
		t.Fatalf("a fenced Lock: fence %v, %v", l.Fence(), err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := c2.Lock(ctx, "orders", 10*time.Second) // in line, woken by the release
		if err == nil {
			err = l2.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter failed once and listens (see testPrimitivesOn)
	if in, err := c1.Inspect(ctx, "orders"); err != nil || !in.Held || in.Nodes[0].Fence == 0 {
		t.Fatalf("Inspect: %+v, %v", in, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the Lock in line returns", got); err != nil {
		t.Fatalf("the Lock in line: %v", err)
	}
	campaign(t, ctx, c1, c2)
}

// campaign runs an election of c1 and c2: c2 observes, c1 leads and proclaims, c2 waits in line
// and leads once c1 resigns.
func campaign(t *testing.T, ctx context.Context, c1, c2 *redlock.Client) {
	t.Helper()
	e1, _ := c1.Election("scheduler", 10*time.Second)
	e2, _ := c2.Election("scheduler", 10*time.Second)
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := e2.Observe(octx)
	redistest.Receive(t, "the first observation", changes)
	term, err := e1.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if l := redistest.Receive(t, "the leader observed", changes); l.Value != "a" || l.Term != term.Term() {
		t.Errorf("observed %+v, want a in term %d", l, term.Term())
	}
	if err := term.Proclaim(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.TryCampaign(ctx, "c"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a second candidate: %v", err)
	}
	next := make(chan error, 1)
	go func() {
		t2, err := e2.Campaign(ctx, "c")
		if err == nil {
			err = t2.Resign(ctx)
		}
		next <- err
	}()
	time.Sleep(100 * time.Millisecond) // in line
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redistest.Receive(t, "the candidate in line leads", next); err != nil {
		t.Fatalf("the candidate in line: %v", err)
	}
}
