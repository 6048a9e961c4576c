package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Each script takes the stored key as KEYS[1] and the acquisition's token as ARGV[1], so that
// variants (fencing, several keys, reentrancy) add keys and arguments without changing callers.
// go-redis runs them with EVALSHA and falls back to EVAL when a node answers NOSCRIPT.
var (
	//go:embed scripts/release.lua
	releaseSource string
	//go:embed scripts/extend.lua
	extendSource string
	//go:embed scripts/acquire.lua
	acquireSource string
	//go:embed scripts/fence.lua
	fenceSource string

	releaseScript = redis.NewScript(releaseSource)
	extendScript  = redis.NewScript(extendSource)
	acquireScript = redis.NewScript(acquireSource)
	fenceScript   = redis.NewScript(fenceSource)
)
