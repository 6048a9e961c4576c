-- Fencing, round 1: SET KEYS[1] to token ARGV[1] with NX PX ARGV[2] ms, and in the same atomic
-- step read this node's fencing counter KEYS[2] and its clock (TIME, after the SET).
-- Returns {1, counter, seconds, microseconds} when the key was set, {0} when it was taken.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return {0}
end
local now = redis.call("TIME")
return {1, redis.call("GET", KEYS[2]) or "0", now[1], now[2]}
