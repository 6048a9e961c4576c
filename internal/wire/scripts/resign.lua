-- Election, end a term (after queue.lua): release.lua's release of the lock key, which also
-- deletes the value and announces that there is no leader to every Client.
-- KEYS: the lock key, its queue, its leases, the value. ARGV: the token, the channel ("" for a
-- roll-back: nothing announced), the lock key's name in the announcements, the waiter that
-- acquired ("" for none), the value's name in the announcements.
-- Returns 1 when the key held the token and is deleted, 0 when it was absent or another's.
local now = now_ms()
if ARGV[4] ~= "" then
	leave(KEYS[2], KEYS[3], ARGV[4])
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[1], KEYS[4])
if ARGV[2] ~= "" then
	announce(KEYS[2], KEYS[3], ARGV[2], ARGV[3], now)
	redis.call("PUBLISH", ARGV[2], ARGV[5] .. "\n")
end
return 1
