package redlock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The commands of a Lock and its Unlock are built once for all nodes: go-redis's SetNX and
// Script.Run would build a new argument slice for every node and box the key, the SHA1 and each
// script key into it again. A slice built here is only read once made, so that the commands of
// every node share it, and it is sent with conn.Process.

// evalsha returns the EVALSHA of script on keys with args.
func evalsha(script *redis.Script, keys []string, args ...any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, args...)
}

// run sends args, script's EVALSHA made by evalsha, to node, and the script itself (EVAL) when
// the node does not have it yet, as Script.Run does.
func run(ctx context.Context, node conn, script *redis.Script, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if args[2] != 0 {
		cmd.SetFirstKeyPos(3) // as Script.Run's, for a Redis Cluster
	}
	if err := node.Process(ctx, cmd); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd
	}
	keys := make([]string, args[2].(int))
	for i := range keys {
		keys[i] = args[3+i].(string)
	}
	return script.Eval(ctx, node, keys, args[3+len(keys):]...)
}

// newLike returns a command of cmd's type with args: a *redis.BoolCmd, else a *redis.Cmd, the
// types that conn.Process is given. A batch or a cluster sends it in cmd's place, and copyReply
// hands its reply on.
func newLike(ctx context.Context, cmd redis.Cmder, args []any) redis.Cmder {
	if _, ok := cmd.(*redis.BoolCmd); ok {
		return redis.NewBoolCmd(ctx, args...)
	}
	return redis.NewCmd(ctx, args...)
}

// copyReply sets cmd's reply to that of from, made by newLike(cmd).
func copyReply(cmd, from redis.Cmder) {
	switch cmd := cmd.(type) {
	case *redis.BoolCmd:
		cmd.SetVal(from.(*redis.BoolCmd).Val())
	case *redis.Cmd:
		cmd.SetVal(from.(*redis.Cmd).Val())
	}
	cmd.SetErr(from.Err())
}
