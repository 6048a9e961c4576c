package doctor

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The commands the library sends: sent by the Client itself, and scripted, called by its
// scripts (TestCheckNeedsEveryScriptedCommand keeps the list in step with the scripts).
var (
	sent     = []string{"EVALSHA", "EVAL", "SET", "PUBLISH", "SUBSCRIBE", "TIME"}
	scripted = []string{"DEL", "EXISTS", "GET", "PEXPIRE", "PTTL", "ZADD", "ZCARD", "ZPOPMIN", "ZRANGE",
		"ZRANGEBYSCORE", "ZRANK", "ZREM", "ZREMRANGEBYSCORE", "ZSCORE"}
	needed = append(slices.Clone(sent), scripted...)
)

// An asker sends one command to a node and returns its reply.
type asker func(args ...string) (any, error)

// missingCommands returns the needed commands that the server does not know (COMMAND INFO
// answers nil for a command renamed or missing).
func missingCommands(ask asker) ([]string, error) {
	v, err := ask(append([]string{"COMMAND", "INFO"}, needed...)...)
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if len(a) != len(needed) {
		return nil, fmt.Errorf("COMMAND INFO replied %d entries for %d commands", len(a), len(needed))
	}
	var missing []string
	for i, e := range a {
		if e == nil {
			missing = append(missing, needed[i])
		}
	}
	return missing, nil
}

// dryRuns are the commands the connection's user must be allowed, on every key and channel
// the library touches under the prefix, as its own naming gives them (wire.Names): a script on
// each key it keeps for a name, whatever the name is of (EVALSHA, which needs to read and write
// it), PUBLISH and SUBSCRIBE on each of its channels, and the other commands it sends and its
// scripts call on the lock key and its queue. For a vote, the keys are in v's slot.
func (c *doctor) dryRuns(v *slot) [][]string {
	in := func(key string) string {
		if v != nil {
			return v.in(key)
		}
		return key
	}
	sha := strings.Repeat("0", 40)
	var runs [][]string
	for _, k := range c.names.Every("doctor") {
		runs = append(runs, []string{"EVALSHA", sha, "1", in(k)})
	}
	for _, ch := range c.names.Channels(c.id) {
		runs = append(runs, []string{"PUBLISH", ch, "m"}, []string{"SUBSCRIBE", ch})
	}
	m := c.names.Mutex("doctor")
	key, queue := in(m.Lock), in(m.Queue)
	return append(runs, [][]string{
		{"EVAL", "return 1", "2", key, queue}, {"SET", key, "v", "NX", "PX", "1000"}, {"TIME"},
		{"GET", key}, {"DEL", key}, {"EXISTS", key}, {"PEXPIRE", key, "1000"}, {"PTTL", key},
		{"ZADD", queue, "1", "m"}, {"ZCARD", queue}, {"ZPOPMIN", queue}, {"ZRANGE", queue, "0", "-1"},
		{"ZRANGEBYSCORE", queue, "0", "1"}, {"ZRANK", queue, "m"}, {"ZREM", queue, "m"},
		{"ZREMRANGEBYSCORE", queue, "0", "1"}, {"ZSCORE", queue, "m"},
	}...)
}

// dryRun asks the server whether the connection's user may run the dryRuns (ACL DRYRUN, Redis
// 7), all at once, and returns the user and what was refused: "COMMAND: the server's reason".
// A dry run that fails (a command renamed away, which the commands check reports) is left
// out; when every one fails, dryRun returns the first error.
func (c *doctor) dryRun(r *reading, ask asker) (string, []string, error) {
	v, err := ask("ACL", "WHOAMI")
	var user string
	if err == nil {
		user, err = text(v)
	}
	if err != nil {
		return "", nil, err
	}
	tries := c.dryRuns(r.vote)
	verdicts := make([]string, len(tries))
	errs := make([]error, len(tries))
	var wg sync.WaitGroup
	for i, try := range tries {
		wg.Go(func() {
			v, err := ask(append([]string{"ACL", "DRYRUN", user}, try...)...)
			if err == nil {
				verdicts[i], err = text(v)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var denied []string
	failed := 0
	for i, try := range tries {
		switch {
		case errs[i] != nil:
			failed++
		case verdicts[i] != "OK":
			denied = append(denied, try[0]+": "+verdicts[i])
		}
	}
	if failed == len(tries) {
		return user, nil, errs[0]
	}
	return user, denied, nil
}

// acl: the connection's user may run every command on the prefix's keys and channels.
func (j *judge) acl(r *reading) (Verdict, string) {
	if r.aclErr != nil {
		return Warn, "not checked: " + r.aclErr.Error() + " (ACL DRYRUN needs Redis 7 and the right to run it)"
	}
	pattern := j.c.names.Prefix() + "*"
	if len(r.denied) == 0 {
		return OK, fmt.Sprintf("user %s may run every command the library sends on each kind of key (%d) and channel (%d) it "+
			"touches, all %q", r.user, len(j.c.names.Every("doctor")), len(j.c.names.Channels(j.c.id)), pattern)
	}
	var refused []string
	for _, d := range r.denied {
		if cmd, _, _ := strings.Cut(d, ": "); !slices.Contains(refused, cmd) {
			refused = append(refused, cmd)
		}
	}
	_, first, _ := strings.Cut(r.denied[0], ": ")
	return Fail, fmt.Sprintf("user %s is refused %s (%d of %d dry runs; the first said: %s): allow it the keys ~%s and channels &%s, "+
		"and these commands (ACL SETUSER)", r.user, strings.Join(refused, ", "), len(r.denied), len(j.c.dryRuns(r.vote)), first, pattern, pattern)
}
