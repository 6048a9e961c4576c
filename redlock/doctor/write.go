package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// writeScript writes KEYS[1] and deletes it at once: a node that refuses the lock's writes
// refuses its SET, whatever the reason. (The key would expire within a second if the DEL failed.)
var writeScript = newLuaScript("redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000) redis.call('DEL', KEYS[1]) return 1")

// tryWrite writes the probe key on node r, as a script (as the library writes), and returns
// the node's refusal or why no reply came; nil when the write went through.
func (c *doctor) tryWrite(ctx context.Context, r *reading, bound time.Duration) error {
	_, err := within(ctx, bound, func(ctx context.Context) (any, error) {
		return c.nodes[r.node].Eval(ctx, writeScript, []string{c.names.Probe()}, []string{c.id})
	})
	return err
}

// replyCode returns the code that starts a server's error reply ("READONLY", "MISCONF"), and ""
// for nil and for an error that is no reply (a refused connection, a timeout).
func replyCode(err error) string {
	if err == nil {
		return ""
	}
	code, _, _ := strings.Cut(err.Error(), " ")
	if len(code) < 2 || strings.TrimLeft(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return ""
	}
	return code
}

// A reason is what a server's reason to refuse a write means, and what to do about it.
type reason struct{ means, fix string }

// writeRefusals are the server's reasons to refuse a write, by their code.
var writeRefusals = map[string]reason{
	"READONLY":   {"it is a read-only replica", "give independent masters only"},
	"NOREPLICAS": {"it has fewer replicas in time than min-replicas-to-write asks for", "bring the replicas back, or set min-replicas-to-write 0"},
	"MISCONF": {"its last background save failed, and stop-writes-on-bgsave-error yes refuses writes until one succeeds",
		"fix what its log says (the disk, the dir), or set stop-writes-on-bgsave-error no"},
	"OOM":    {"it is at maxmemory, and noeviction refuses writes", "raise maxmemory"},
	"NOPERM": {"the ACL refuses the user", "see acl"},
}

// write: the node takes the library's writes.
func (j *judge) write(r *reading) (Verdict, string) {
	code := replyCode(r.wrote)
	switch {
	case r.wrote == nil:
		return OK, "takes a write: a script's SET and DEL of " + j.c.names.Probe() + ", a key no lock has"
	case code == "":
		return Warn, "not checked: the write had no reply: " + r.wrote.Error()
	}
	said := firstSentence(r.wrote.Error())
	why, ok := writeRefusals[code]
	if !ok { // a command renamed away (see commands), a script running too long, ...
		return Fail, "the write failed (" + said + "): every lock fails so on it, and it counts as no vote"
	}
	return Fail, fmt.Sprintf("refuses writes (%s): %s: every lock is refused on it, and it counts as no vote: %s", said, why.means, why.fix)
}

// firstSentence returns s up to its first full stop, without it.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// uncounted says why node r, which answered, counts as no vote, or "" when it counts: it
// refuses writes, it is a replica (a writable one votes, but its keys go with its master's
// next resync: no independent vote, as a server given twice is none), or it is a server given
// before it.
func (j *judge) uncounted(r *reading) string {
	if code := replyCode(r.wrote); code != "" {
		if _, ok := writeRefusals[code]; !ok {
			return fmt.Sprintf("node %d fails writes (%s)", r.node, code)
		}
		return fmt.Sprintf("node %d refuses writes (%s)", r.node, code)
	}
	if r.info["role"] == "slave" && writable(r) {
		return fmt.Sprintf("node %d votes, but is a writable replica: a resync from its master wipes its keys", r.node)
	}
	if r.info["role"] == "slave" {
		return fmt.Sprintf("node %d is a replica", r.node)
	}
	if o := j.twin(r); o != nil {
		return fmt.Sprintf("node %d is node %d again", r.node, o.node)
	}
	return ""
}
