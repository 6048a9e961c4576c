-- LockAll, release (after queue.lua). KEYS: n keys, then their n queues, then their n leases.
-- ARGV: the token, the channel to announce each release on ("" for none), then the n names in
-- the announcements. Deletes each key that holds the token and announces it as release.lua
-- does. Returns 1 when the keys were ours, 0 otherwise.
local n = #KEYS / 3
local now = now_ms()
local held = 0
for i = 1, n do
	if redis.call("GET", KEYS[i]) == ARGV[1] then
		redis.call("DEL", KEYS[i])
		held = 1
		if ARGV[2] ~= "" then
			announce(KEYS[n + i], KEYS[2 * n + i], ARGV[2], ARGV[2 + i], now)
		end
	end
end
return held
