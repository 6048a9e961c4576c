package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/redlock"
)

func TestParseNodes(t *testing.T) {
	nodes, err := parseNodes(" redis://alice:pw1@127.0.0.1:7001 ,rediss://bob:pw2@example.com:7002/3, redis://:pw3@[::1]:7003?dial_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, addr, user, pass string }{
		{"redis://alice:xxxxx@127.0.0.1:7001", "127.0.0.1:7001", "alice", "pw1"},
		{"rediss://bob:xxxxx@example.com:7002/3", "example.com:7002", "bob", "pw2"},
		{"redis://:xxxxx@[::1]:7003?dial_timeout=2s", "[::1]:7003", "", "pw3"},
	}
	if len(nodes) != len(want) {
		t.Fatalf("got %d nodes, want %d", len(nodes), len(want))
	}
	for i, w := range want {
		n := nodes[i]
		if n.name != w.name || n.opts.Addr != w.addr || n.opts.Username != w.user || n.opts.Password != w.pass {
			t.Errorf("node %d: %q %s %q %q, want %+v", i, n.name, n.opts.Addr, n.opts.Username, n.opts.Password, w)
		}
		if !n.opts.ContextTimeoutEnabled {
			t.Errorf("node %d: calls are not bounded by their context", i)
		}
	}
	if tls := nodes[1].opts.TLSConfig; tls == nil || tls.InsecureSkipVerify || tls.ServerName != "example.com" {
		t.Errorf("rediss:// must verify the server's certificate: %+v", tls)
	}
	if nodes[1].opts.DB != 3 {
		t.Errorf("db = %d, want 3", nodes[1].opts.DB)
	}
}

func TestParseNodesRejects(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"redis://alice:hunter2@127.0.0.1:1,", "node 1: empty URL"},
		{"http://alice:hunter2@127.0.0.1:1", "node 0 (http://alice:xxxxx@127.0.0.1:1): want a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL"},
		{"redis://alice:hunter2@127.0.0.1:1,redis://bob:hunter2@127.0.0.1:1/2", "node 1 (redis://bob:xxxxx@127.0.0.1:1/2): the same server as node 0"},
		{"redis://alice:hun%zzter2@127.0.0.1:1", "node 0 (redis://alice:xxxxx@127.0.0.1:1): not a valid URL"},
		{"redis://alice:hunter2@127.0.0.1:port", "node 0 (redis://alice:xxxxx@127.0.0.1:port): not a valid URL"},
		{"redis://alice:hunter2@127.0.0.1:1/x", "invalid database number"},
		{"redis://alice:hunter2@127.0.0.1:1?colour=red", "unexpected option: colour"},
		{"redis:///nohost", "no host"},
		{"alice:hunter2@127.0.0.1:1", "not a clear URL"},
		{"redis://alice:hunter2#@127.0.0.1:1", "node 0 (redis://alice:xxxxx@127.0.0.1:1): not a valid URL"},
		{"redis://alice?:hunter2@127.0.0.1:1", "not a clear URL"},
	} {
		_, err := parseNodes(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseNodes(%q) = %v, want an error with %q", tc.spec, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseNodes(%q): the error shows the password: %v", tc.spec, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://127.0.0.1:6379":                              "redis://127.0.0.1:6379",
		"redis://alice@127.0.0.1:6379":                        "redis://alice@127.0.0.1:6379",
		"redis://alice:pw@127.0.0.1:6379/0":                   "redis://alice:xxxxx@127.0.0.1:6379/0",
		"redis://alice:p%zzw@h:1/0":                           "redis://alice:xxxxx@h:1/0",
		"redis://alice:p@ss@h:1":                              "redis://alice:xxxxx@h:1",
		"redis://alice:p w@h:bad?x=1":                         "redis://alice:xxxxx@h:bad?x=1",
		"rediss://:only-a-password@h:1":                       "rediss://:xxxxx@h:1",
		"alice:pw@h:1 (not a URL at all)%zz":                  "alice:xxxxx@h:1 (not a URL at all)%zz",
		"redis://alice:pa#ss@h:1":                             "redis://alice:xxxxx@h:1",
		"redis://alice:pa/ss@h:1":                             "redis://alice:xxxxx@h:1",
		"redis://h:1/path@with-an-at-after-path":              "redis://h:xxxxx@with-an-at-after-path", // ambiguous: hidden
		"redis://h:1?password=pw":                             "redis://h:1?password=xxxxx",
		"redis://h:1?db=1&Password=pw&dial_timeout=1s":        "redis://h:1?db=1&Password=xxxxx&dial_timeout=1s",
		"redis://h:1?pass%77ord=pw;sentinel_password=pw2&x=1": "redis://h:1?pass%77ord=xxxxx;sentinel_password=xxxxx&x=1",
		"redis://h:1?password=p#w?x&y=2":                      "redis://h:1?password=xxxxx&y=2",
		"redis://alice:pw@h:1?password=pw2":                   "redis://alice:xxxxx@h:1?password=xxxxx",
		"redis://h:bad port?password=pw%zz":                   "redis://h:bad port?password=xxxxx",
		"redis+cluster://h:1?addr=h:2&password=pw&addr=h:3":   "redis+cluster://h:1?addr=h:2&password=xxxxx&addr=h:3",
		"redis://h:1?passwordless=":                           "redis://h:1?passwordless=xxxxx",
		"redis://h:1?password":                                "redis://h:1?password",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever the password, in the user information or in the query, it shows neither in a
// node's name nor in an error about its URL.
func FuzzPasswordNeverShown(f *testing.F) {
	f.Add("alice", "hunter2", "127.0.0.1:1", "/0")
	f.Add("", "p%zz00", "h:port", "")
	f.Add("bob", "a@b:c/d", "[::1]:1", "?x=1")
	f.Add("0?", "000000", "00", "")
	f.Fuzz(func(t *testing.T, user, pass, host, tail string) {
		if len(pass) < 6 || strings.Trim(pass, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ") == "" {
			return // short or plain words: may be found in the rest of the text
		}
		if strings.ContainsFunc(host+tail, func(r rune) bool { return r == '%' || r <= ' ' || r >= 0x7f }) {
			return // escaping the rest of the URL could spell the password out of other bytes
		}
		escaped := url.UserPassword(user, pass).String()
		escUser, escPass, _ := strings.Cut(escaped, ":")
		// Each URL with the password put in one place, escaped or as typed.
		type put struct{ before, pass, after string }
		q := strings.ReplaceAll(tail, "?", "&")
		puts := []put{{"redis://" + host + "?password=", url.QueryEscape(pass), q}}
		if !strings.ContainsAny(pass, "&;") { // as typed: "&" and ";" end a query parameter
			puts = append(puts, put{"redis://" + host + "?password=", pass, q})
		}
		puts = append(puts, put{"redis://" + escUser + ":", escPass, "@" + host + tail}, put{"redis://" + user + ":", pass, "@" + host + tail})
		for _, p := range puts {
			raw := p.before + p.pass + p.after
			if strings.Contains(raw, ",") {
				continue // a comma splits the list into several URLs
			}
			if strings.Contains(p.before+"\x00"+p.after, pass) {
				continue // the password is also elsewhere in the URL
			}
			nodes, err := parseNodes(raw)
			if err != nil && strings.Contains(err.Error(), pass) {
				t.Fatalf("error for %q shows the password: %v", raw, err)
			}
			for _, n := range nodes {
				if strings.Contains(n.name, pass) {
					t.Fatalf("name of %q shows the password: %s", raw, n.name)
				}
			}
		}
	})
}

func TestDescribe(t *testing.T) {
	nodes := []node{{name: "redis://a:xxxxx@h:1"}, {name: "redis://a:xxxxx@h:2"}}
	err := errors.Join(redlock.ErrNotAcquired,
		&redlock.NodeError{Node: 1, Addr: "h:2", Err: errors.New("WRONGPASS")},
		errors.Join(&redlock.NodeError{Node: 0, Addr: "h:1", Err: errors.New("held by another owner")}))
	got := fmt.Sprint(describe(err, nodes))
	want := "[redlock: not acquired node 0 (redis://a:xxxxx@h:1): held by another owner node 1 (redis://a:xxxxx@h:2): WRONGPASS]"
	if got != want {
		t.Fatalf("describe = %s\nwant       %s", got, want)
	}
}

func TestChildEnv(t *testing.T) {
	env := []string{"A=1", "REDLOCK_FENCE=7", "REDLOCK_TOKEN=outer", "B=2"}
	if got := fmt.Sprint(childEnv(env, envVar{"REDLOCK_TOKEN", "tok"}, envVar{"REDLOCK_FENCE", fenceVar(0)})); got != "[A=1 B=2 REDLOCK_TOKEN=tok]" {
		t.Errorf("no fencing: %s", got)
	}
	if got := fmt.Sprint(childEnv(env, envVar{"REDLOCK_TOKEN", "tok"}, envVar{"REDLOCK_FENCE", fenceVar(42)})); got != "[A=1 B=2 REDLOCK_TOKEN=tok REDLOCK_FENCE=42]" {
		t.Errorf("fence 42: %s", got)
	}
	if got := fmt.Sprint(childEnv(env, envVar{"REDLOCK_TERM", "7"})); got != "[A=1 REDLOCK_FENCE=7 REDLOCK_TOKEN=outer B=2 REDLOCK_TERM=7]" {
		t.Errorf("a term: %s", got)
	}
	if env[1] != "REDLOCK_FENCE=7" || env[2] != "REDLOCK_TOKEN=outer" {
		t.Error("the caller's slice was changed")
	}
}

func TestParseClusterNodes(t *testing.T) {
	nodes, err := parseNodes("redis+cluster://alice:pw1@127.0.0.1:7001?addr=127.0.0.1:7002&addr=127.0.0.1:7003,rediss+cluster://bob:pw2@example.com:7004,redis://127.0.0.1:7005")
	if err != nil {
		t.Fatal(err)
	}
	c := nodes[0].cluster
	if nodes[0].name != "redis+cluster://alice:xxxxx@127.0.0.1:7001?addr=127.0.0.1:7002&addr=127.0.0.1:7003" || c == nil ||
		fmt.Sprint(c.Addrs) != "[127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003]" || c.Username != "alice" || c.Password != "pw1" || !c.ContextTimeoutEnabled {
		t.Errorf("node 0: %q %+v", nodes[0].name, c)
	}
	if tls := nodes[1].cluster.TLSConfig; tls == nil || tls.InsecureSkipVerify {
		t.Errorf("rediss+cluster:// must verify the server's certificate: %+v", tls)
	}
	if nodes[2].opts == nil || nodes[2].cluster != nil {
		t.Errorf("node 2 is a plain server: %+v", nodes[2])
	}
	// A seed address of a cluster given again counts one master twice.
	_, err = parseNodes("redis+cluster://127.0.0.1:7001?addr=127.0.0.1:7002,redis://127.0.0.1:7002")
	if err == nil || !strings.Contains(err.Error(), "the same server as node 0") {
		t.Errorf("a seed address given twice: %v", err)
	}
}
