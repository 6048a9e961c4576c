-- LockAll, release: KEYS are n keys, then their n queues. Delete each key that holds token
-- ARGV[1] and, unless ARGV[2] is "", announce its release as release.lua does: to the waiter
-- first in its queue (a Client.Lock call), or to everyone.
-- Returns 1 when the keys were ours, 0 otherwise.
local n = #KEYS / 2
local held = 0
for i = 1, n do
	if redis.call("GET", KEYS[i]) == ARGV[1] then
		redis.call("DEL", KEYS[i])
		held = 1
		if ARGV[2] ~= "" then
			local next = redis.call("ZPOPMIN", KEYS[n + i])[1]
			if next then
				redis.call("PUBLISH", ARGV[2] .. ":" .. string.match(next, "^[^.]*"), KEYS[i] .. "\n" .. next)
			else
				redis.call("PUBLISH", ARGV[2], KEYS[i] .. "\n")
			end
		end
	end
end
return held
