-- Acquire, for a contender in a queue or with fencing (an uncontended lock without fencing is a
-- plain SET NX PX): SET KEYS[1] to token ARGV[1] with NX PX ARGV[2] ms.
-- KEYS[2] is the key's queue of waiting contenders, a sorted set. Waiter ARGV[3] (none when
-- empty) that finds the key taken joins it with score ARGV[4], keeping the score of its first
-- try, and leaves it when it gets the key. The queue expires ARGV[2] ms after the last join.
-- With ARGV[5] "1" (polite), the waiter does not take the key while another waiter heads the
-- queue: it joins the queue instead, even when the key is free.
-- KEYS[3], with fencing, is the fencing counter: a success then also reads it and this node's
-- clock (TIME, after the SET), in the same atomic step.
-- Returns {0} when the key was taken, {1} when it was set, {1, counter, seconds, microseconds}
-- with fencing.
local head = ARGV[5] == "1" and redis.call("ZRANGE", KEYS[2], 0, 0)[1]
if (head and head ~= ARGV[3]) or not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	if ARGV[3] ~= "" then
		redis.call("ZADD", KEYS[2], "NX", ARGV[4], ARGV[3])
		redis.call("PEXPIRE", KEYS[2], ARGV[2])
	end
	return {0}
end
if ARGV[3] ~= "" then
	redis.call("ZREM", KEYS[2], ARGV[3])
end
if KEYS[3] == nil then
	return {1}
end
local now = redis.call("TIME")
return {1, redis.call("GET", KEYS[3]) or "0", now[1], now[2]}
