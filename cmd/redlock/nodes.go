package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/quorumlock/redlock/internal/keyslot"
	"github.com/quorumlock/redlock/redlock"
	"github.com/quorumlock/redlock/redlock/driver"
	"github.com/quorumlock/redlock/redlock/goredisnode"
)

// A node is one vote of the lock named on the command line: a Redis master, a whole Redis
// Cluster (redis+cluster://), or, with --cluster and --votes, one vote on a cluster's masters.
type node struct {
	name    string // the URL with its password replaced: the only form that is ever printed
	opts    *redis.Options
	cluster *redis.ClusterOptions // instead of opts, for a cluster
	tag     string                // a vote's hash tag, "{t}", before every key of the lock
	master  string                // a vote's master, as the cluster said when it was read
}

// parseNodes reads a comma-separated list of redis://, rediss://, redis+cluster:// or
// rediss+cluster:// URLs with go-redis's URL parsers (a cluster's URL names one seed address
// and may add others as addr= parameters). TLS (rediss) verifies the server's certificate
// unless the URL says skip_verify=true. Errors name a node by its position and its redacted URL.
func parseNodes(spec string) ([]node, error) {
	var nodes []node
	seen := map[string]int{}
	for i, raw := range strings.Split(spec, ",") {
		n, addrs, err := parseNode(i, strings.TrimSpace(raw))
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if j, ok := seen[a]; ok {
				// Two entries for one server would count one master twice towards the quorum.
				return nil, fmt.Errorf("node %d (%s): the same server as node %d", i, n.name, j)
			}
			seen[a] = i
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseNode reads the URL of node i and returns the node and the addresses it names.
func parseNode(i int, raw string) (node, []string, error) {
	name, clean := redactURL(raw)
	if raw == "" {
		return node{}, nil, fmt.Errorf("node %d: empty URL in the node list", i)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole input in its error, password included: never print it.
		return node{}, nil, fmt.Errorf("node %d (%s): not a valid URL", i, name)
	}
	if !clean {
		// Parsers' errors may quote pieces of such a URL, password included.
		return node{}, nil, fmt.Errorf("node %d (%s): not a clear URL: escape '@', ':', '/', '?' and '#' in the user name and password as %%XX", i, name)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		// go-redis would drop such a parameter silently, a password in it included.
		return node{}, nil, fmt.Errorf("node %d (%s): not a clear URL: a query parameter is malformed; escape '%%' as %%25 and ';' as %%3B", i, name)
	}
	if u.Host == "" {
		return node{}, nil, fmt.Errorf("node %d (%s): no host", i, name)
	}
	n := node{name: name}
	var addrs []string
	switch u.Scheme {
	case "redis", "rediss":
		if n.opts, err = redis.ParseURL(raw); err == nil {
			addrs = []string{n.opts.Addr}
			// The command bounds every call with a context; let go-redis honour it, and
			// keep it from asking the server for maintenance notifications it may not know.
			n.opts.ContextTimeoutEnabled = true
			// One dial a call: a refused connection is reported as such, not as a timeout
			// after go-redis's dial retries; the next call dials again anyway.
			n.opts.DialerRetries = 1
			n.opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		}
	case "redis+cluster", "rediss+cluster":
		if n.cluster, err = redis.ParseClusterURL(strings.Replace(raw, "+cluster", "", 1)); err == nil {
			addrs = n.cluster.Addrs
			n.cluster.ContextTimeoutEnabled = true
			n.cluster.DialerRetries = 1
			n.cluster.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		}
	default:
		return node{}, nil, fmt.Errorf("node %d (%s): want a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL", i, name)
	}
	if err != nil {
		return node{}, nil, fmt.Errorf("node %d (%s): %v", i, name, err)
	}
	return n, addrs, nil
}

// redact returns raw with the password of its user information, and the value of every query
// parameter whose name holds "pass" (password=, sentinel_password=), replaced by "xxxxx", also
// when raw is not a valid URL.
func redact(raw string) string {
	name, _ := redactURL(raw)
	return name
}

// redactURL is redact that also says whether raw's user information is clear-cut. When it is
// not (an '@' outside well-formed user information, as when a password holds an unescaped '#',
// '/' or '?'), everything between the user name and the last '@' is hidden: that may hide more
// of an odd URL than needed, never less than the password.
func redactURL(raw string) (name string, clean bool) {
	name, clean = redactUser(raw)
	return redactQuery(name), clean
}

// redactUser is redactURL for the user information alone.
func redactUser(raw string) (name string, clean bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	} else {
		scheme += "://"
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw, true // no user information, so no password
	}
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" && u.User != nil && strings.Count(rest, "@") == 1 {
		return u.Redacted(), true
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw, false
	}
	return scheme + user + ":xxxxx" + rest[at:], false
}

// redactQuery returns s with the value of every query parameter whose name, unescaped, holds
// "pass" in any case replaced by "xxxxx": everything after the first "?" is the query, split at
// "&" and ";", so that a value with an unescaped "#" or "?" is hidden whole.
func redactQuery(s string) string {
	head, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	var b strings.Builder
	b.WriteString(head + "?")
	for query != "" {
		end := strings.IndexAny(query, "&;")
		if end < 0 {
			end = len(query)
		}
		param := query[:end]
		name, _, hasValue := strings.Cut(param, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasValue && strings.Contains(strings.ToLower(name), "pass") {
			param = param[:strings.Index(param, "=")] + "=xxxxx"
		}
		b.WriteString(param)
		b.WriteString(query[end:min(end+1, len(query))])
		query = query[min(end+1, len(query)):]
	}
	return b.String()
}

// clients opens a go-redis client per node; close them with closeClients.
func clients(nodes []node) []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		if n.cluster != nil {
			cs[i] = redis.NewClusterClient(n.cluster)
		} else {
			cs[i] = redis.NewClient(n.opts)
		}
	}
	return cs
}

// expand turns --cluster's one node into its votes, each named by the vote's tag and the master
// that serves it, as redlock.NewCluster places them; cs[0] is the cluster's client. Without
// --cluster it returns nodes and cs as they are.
func (f *nodeFlags) expand(ctx context.Context, nodes []node, cs []redis.UniversalClient) ([]node, []redis.UniversalClient, error) {
	if f.cluster == "" {
		return nodes, cs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
	defer cancel()
	placed, err := keyslot.Votes(ctx, cs[0].(*redis.ClusterClient), f.votes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: place %d votes: %v", nodes[0].name, f.votes, err)
	}
	votes := make([]node, len(placed))
	vcs := make([]redis.UniversalClient, len(placed))
	for i, v := range placed {
		votes[i] = node{name: fmt.Sprintf("vote {%s} on %s", v.Tag, v.Master), tag: "{" + v.Tag + "}", master: v.Master}
		vcs[i] = cs[0]
	}
	return votes, vcs, nil
}

// locker returns the Client for the nodes as parsed: over --nodes, or --votes on --cluster.
func (f *nodeFlags) locker(ctx context.Context, cs []redis.UniversalClient, opts ...redlock.Option) (*redlock.Client, error) {
	if f.cluster == "" {
		return redlock.New(cs, opts...)
	}
	ctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
	defer cancel()
	return redlock.NewCluster(ctx, cs[0].(*redis.ClusterClient), f.votes, opts...)
}

// lockNodes returns the nodes of a Client over cs, as locker would make it: goredisnode's, or with
// --cluster the votes of NewCluster.
func (f *nodeFlags) lockNodes(ctx context.Context, cs []redis.UniversalClient) ([]driver.Node, error) {
	if f.cluster == "" {
		ns := make([]driver.Node, len(cs))
		for i, c := range cs {
			ns[i] = goredisnode.New(c)
		}
		return ns, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.nodeTimeout)
	defer cancel()
	votes, err := goredisnode.Votes(ctx, cs[0].(*redis.ClusterClient), f.votes, len(f.prefix))
	if err != nil {
		return nil, fmt.Errorf("redlock: place %d votes on the cluster: %w", f.votes, err)
	}
	return votes, nil
}

func closeClients(cs []redis.UniversalClient) {
	for _, c := range cs {
		c.Close()
	}
}

// describe writes err the way an operator reads it: one line a node, each naming the node by
// its index and redacted URL. Addresses in the library's errors are host:port only.
func describe(err error, nodes []node) []string {
	var lines []string
	walkErrors(err, func(e error) {
		if ne, ok := e.(*redlock.NodeError); ok && ne.Node >= 0 && ne.Node < len(nodes) {
			lines = append(lines, fmt.Sprintf("node %d (%s): %v", ne.Node, nodes[ne.Node].name, ne.Err))
			return
		}
		lines = append(lines, e.Error())
	})
	// Node lines in node order, after any others.
	slices.SortStableFunc(lines, func(a, b string) int {
		return strings.Compare(nodeOrder(a), nodeOrder(b))
	})
	return lines
}

// walkErrors calls f with each error that err joins (errors.Join), depth first, down to a
// *redlock.NodeError or an error that joins none; nothing for a nil err.
func walkErrors(err error, f func(error)) {
	if _, ok := err.(*redlock.NodeError); !ok {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walkErrors(inner, f)
			}
			return
		}
	}
	if err != nil {
		f(err)
	}
}

// nodeOrder is the sort key of a line from describe: "" for a general line, else the node
// index padded so that node 10 sorts after node 9.
func nodeOrder(line string) string {
	i, ok := lineNode(line)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%09d", i)
}

// lineNode returns the node a line from describe is about, if any.
func lineNode(line string) (int, bool) {
	var i int
	_, err := fmt.Sscanf(line, "node %d ", &i)
	return i, err == nil
}
