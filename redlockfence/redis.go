package redlockfence

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/keyslot"
)

// TokenKeyPrefix starts the name of the key that keeps a resource's highest accepted token on
// the guarded Redis: TokenKeyPrefix + resource, a decimal string without expiry. For resource
// "{acct}" it is "redlockfence:{acct}", in the hash slot of every key "{acct}:…". Set and
// Eval refuse keys under it.
const TokenKeyPrefix = "redlockfence:"

var (
	//go:embed fence.lua
	fenceLua string
	//go:embed set.lua
	setLua string

	// prelude is fence.lua on one line, so that what follows it on that line keeps its
	// line numbers.
	prelude   = oneLine(fenceLua)
	setScript = newScript(prelude + "\n" + setLua)
)

// oneLine joins the lines of a Lua source that are not comments with spaces.
func oneLine(src string) string {
	var code []string
	for line := range strings.Lines(src) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			code = append(code, line)
		}
	}
	return strings.Join(code, " ")
}

// A Redis guard checks tokens on a Redis that keeps a resource (any Redis server, cluster or
// ring: not the lock's nodes), in the same script as the write. It is safe for concurrent
// use.
type Redis struct {
	c redis.UniversalClient
}

// NewRedis returns a guard that writes through c.
func NewRedis(c redis.UniversalClient) *Redis { return &Redis{c: c} }

// Set sets key to value (a string, []byte, number, bool or encoding.BinaryMarshaler, as
// go-redis sends them), with expiry ttl (0 for none; milliseconds, rounded up), when token is
// not lower than the highest accepted for resource, and records token; otherwise it sets
// nothing and returns an error wrapping ErrStale. Check and write are one script. On a Redis
// Cluster or ring, key must be in the hash slot of TokenKeyPrefix + resource: give resource as
// a hash tag ("{acct}") and name key after it ("{acct}:balance"). A key that starts with
// TokenKeyPrefix is an error, and nothing is sent. When resource has no record but key exists,
// Set sets nothing and returns an error wrapping ErrFenceLost.
func (r *Redis) Set(ctx context.Context, resource string, token uint64, key string, value any, ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("redlockfence: negative ttl %v", ttl)
	}
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	_, err := r.run(ctx, setScript, resource, token, []string{key}, value, int64(ms))
	return err
}

// Eval runs script with keys and args when token is not lower than the highest accepted for
// resource, and records token, in one script: script sees KEYS and ARGV as given here, and its
// line numbers in error messages are its own. Eval returns script's reply as go-redis does
// (nil for a nil reply), or for a script error an error that does not wrap ErrStale, even
// when its text reads like the guard's refusal (the token is then recorded all the same: like
// any script, it may have written before it failed). A lower token runs nothing and returns an
// error wrapping ErrStale; a resource without a record runs nothing when one of keys exists,
// and returns an error wrapping ErrFenceLost. On a Redis Cluster or ring, every key must be in
// the hash slot of TokenKeyPrefix + resource, as for Set; a key that starts with TokenKeyPrefix
// is an error, and nothing is sent. script must write only keys it is given. A script that
// starts with a "#!lua" line keeps it as its first line.
func (r *Redis) Eval(ctx context.Context, resource string, token uint64, script string, keys []string, args ...any) (any, error) {
	shebang := ""
	if strings.HasPrefix(script, "#!") {
		line, rest, _ := strings.Cut(script, "\n")
		shebang, script = line+"\n", rest
	}
	// The caller's script is the body of a function that starts on prelude's line.
	src := shebang + prelude + " local function script(...) " + script + "\nend return script(...)"
	return r.run(ctx, newScript(src), resource, token, keys, args...)
}

// run runs s, a script that starts with the prelude, with the token's key before keys, and
// the token and a nonce before args: fence.lua's contract.
func (r *Redis) run(ctx context.Context, s script, resource string, token uint64, keys []string, args ...any) (any, error) {
	if r == nil || r.c == nil {
		return nil, errors.New("redlockfence: nil Redis client")
	}
	if err := checkArgs(resource, token, math.MaxUint64); err != nil {
		return nil, err
	}
	tokenKey := TokenKeyPrefix + resource
	if err := ownKeys(keys); err != nil {
		return nil, err
	}
	if err := r.sameShard(tokenKey, keys); err != nil {
		return nil, err
	}
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	v, err := s.run(ctx, r.c, append([]string{tokenKey}, keys...), append([]any{strconv.FormatUint(token, 10), nonce}, args...))
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		if reply, ok := strings.CutPrefix(rerr.Error(), "REDLOCKFENCE "+nonce+" "); ok {
			return nil, refusal(resource, token, reply)
		}
	}
	var op *net.OpError
	switch {
	case err != nil && !errors.As(err, &rerr) && !(errors.As(err, &op) && op.Op == "dial"):
		return nil, fmt.Errorf("redlockfence: resource %q: no reply, so whether the write happened is unknown: %w", resource, err)
	case err != nil:
		return nil, fmt.Errorf("redlockfence: resource %q: %w", resource, err)
	}
	return v, nil
}

// A script is a Lua script of the guard's, sent once per call.
type script struct{ src, sha string }

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// run runs s on c with keys and args: EVALSHA, and EVAL when the server does not know the
// script. go-redis retries neither, though it would a command whose reply timed out: the
// script may have run, and running it again could write twice, or refuse as stale a write
// that the first run made.
func (s script) run(ctx context.Context, c redis.UniversalClient, keys []string, args []any) (any, error) {
	v, err := evalOnce(ctx, c, "evalsha", s.sha, keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = evalOnce(ctx, c, "eval", s.src, keys, args)
	}
	return v, err
}

func evalOnce(ctx context.Context, c redis.UniversalClient, verb, script string, keys []string, args []any) (any, error) {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, verb, script, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	cmd := once{redis.NewCmd(ctx, append(all, args...)...)}
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // where a cluster or ring finds the key that places it
	}
	_ = c.Process(ctx, cmd)
	return cmd.Result()
}

// once is a command that go-redis never retries.
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

// refusal returns the error of the prelude's refusal, reply without its start and nonce:
// "STALE highest" or "LOST key".
func refusal(resource string, token uint64, reply string) error {
	kind, detail, _ := strings.Cut(reply, " ")
	if kind != "LOST" {
		return stale(resource, token, detail)
	}
	return fmt.Errorf("%w: resource %q: key %q holds data but the record %q is not there (evicted, deleted, lost in a "+
		"restart, or never seeded): a stale holder cannot be told from the current one, so nothing is written until the "+
		"record holds a token no lower than any that wrote the data (0 if none did), or the resource's keys are deleted "+
		"(docs/fencing.md)", ErrFenceLost, resource, detail, TokenKeyPrefix+resource)
}

// ownKeys refuses keys under TokenKeyPrefix: those are the guard's records, and a write there
// would reset a resource's fence.
func ownKeys(keys []string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, TokenKeyPrefix) {
			return fmt.Errorf("redlockfence: key %q starts with TokenKeyPrefix %q, under which the guard keeps the "+
				"highest token of each resource: writing it would reset that resource's fence", k, TokenKeyPrefix)
		}
	}
	return nil
}

// sameShard checks, on a client that places keys by their hash slot (a cluster) or by their
// hash tag (a ring), that every key is where the token's key is: a script runs on one shard.
func (r *Redis) sameShard(tokenKey string, keys []string) error {
	var same func(k string) bool
	switch r.c.(type) {
	case *redis.ClusterClient:
		slot := keyslot.Of(tokenKey)
		same = func(k string) bool { return keyslot.Of(k) == slot }
	case *redis.Ring:
		tag := keyslot.Hashed(tokenKey)
		same = func(k string) bool { return keyslot.Hashed(k) == tag }
	default:
		return nil
	}
	for _, k := range keys {
		if !same(k) {
			return fmt.Errorf("redlockfence: key %q is not in the hash slot of %q, which keeps the resource's token: "+
				"give the resource as a hash tag (\"{acct}\") and put it in the key's name (\"{acct}:balance\")", k, tokenKey)
		}
	}
	return nil
}
