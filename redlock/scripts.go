package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Each script takes the stored key as KEYS[1] and the acquisition's token as ARGV[1], so that
// variants (fencing, several keys, reentrancy) add keys and arguments without changing callers;
// kind says how each sort of lock calls its scripts. go-redis runs them with EVALSHA and falls
// back to EVAL when a node answers NOSCRIPT.
var (
	//go:embed scripts/release.lua
	releaseSource string
	//go:embed scripts/extend.lua
	extendSource string
	//go:embed scripts/acquire.lua
	acquireSource string
	//go:embed scripts/fence.lua
	fenceSource string
	//go:embed scripts/holders.lua
	holdersSource string
	//go:embed scripts/semaphore.lua
	semaphoreSource string
	//go:embed scripts/read.lua
	readSource string
	//go:embed scripts/write.lua
	writeSource string
	//go:embed scripts/write_release.lua
	writeReleaseSource string
	//go:embed scripts/write_abandon.lua
	writeAbandonSource string
	//go:embed scripts/multi_acquire.lua
	multiAcquireSource string
	//go:embed scripts/multi_extend.lua
	multiExtendSource string
	//go:embed scripts/multi_release.lua
	multiReleaseSource string

	releaseScript = redis.NewScript(releaseSource)
	extendScript  = redis.NewScript(extendSource)
	acquireScript = redis.NewScript(acquireSource)
	fenceScript   = redis.NewScript(fenceSource)

	// The holders scripts (semaphore, readers) start with holders.lua's functions. Their
	// extend takes the holders as KEYS[1]; their release the name to announce as KEYS[1] and
	// the holders as KEYS[2].
	semaphoreScript      = redis.NewScript(holdersSource + semaphoreSource)
	readScript           = redis.NewScript(holdersSource + readSource)
	writeScript          = redis.NewScript(holdersSource + writeSource)
	holdersExtendScript  = redis.NewScript(holdersSource + "return extend(KEYS[1], ARGV[1], ARGV[2])\n")
	holdersReleaseScript = redis.NewScript(holdersSource + "return release(KEYS[2], ARGV[1], ARGV[2], KEYS[1])\n")
	writeReleaseScript   = redis.NewScript(writeReleaseSource)
	writeAbandonScript   = redis.NewScript(writeAbandonSource)

	multiAcquireScript = redis.NewScript(multiAcquireSource)
	multiExtendScript  = redis.NewScript(multiExtendSource)
	multiReleaseScript = redis.NewScript(multiReleaseSource)
)
