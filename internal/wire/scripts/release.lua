-- Release a lock key (after queue.lua): compare and delete.
-- KEYS: the lock key, its queue, its leases. ARGV: the token, the channel to announce the
-- release on ("" for none: a roll-back), the key's name in the announcement, and the name of
-- the waiter that acquired the lock ("" for none), which leaves the line whether or not the
-- key is still its own.
-- Returns 1 when the key held the token and is deleted, 0 when it was absent or another's.
local now = now_ms()
if ARGV[4] ~= "" then
	leave(KEYS[2], KEYS[3], ARGV[4])
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[1])
if ARGV[2] ~= "" then
	announce(KEYS[2], KEYS[3], ARGV[2], ARGV[3], now)
end
return 1
