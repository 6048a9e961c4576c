-- A waiter gives up (after queue.lua): it leaves the line, and if it was first and the key is
-- free, the next one is told. KEYS: the lock key, its queue, its leases. ARGV: the waiter's
-- name, the channel, the key's name in the announcement. Returns 1.
local name, now = first(KEYS[2], KEYS[3], nil)
local was_first = name == ARGV[1]
leave(KEYS[2], KEYS[3], ARGV[1])
if was_first and redis.call("EXISTS", KEYS[1]) == 0 then
	announce(KEYS[2], KEYS[3], ARGV[2], ARGV[3], now)
end
return 1
