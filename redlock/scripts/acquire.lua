-- Acquire, for a contender in a queue or with fencing (an uncontended lock without fencing is a
-- plain SET NX PX): set KEYS[1] to token ARGV[1] for ARGV[2] ms unless it is taken.
-- KEYS[2] is the key's queue of waiting contenders, a sorted set. Waiter ARGV[3] (none when
-- empty) that finds the key taken joins it with score ARGV[4], and leaves it when it gets the
-- key. The queue expires ARGV[2] ms after the last join. With ARGV[5] "1" (polite), the waiter
-- does not take the key while another waiter heads the queue: it joins the queue instead, even
-- when the key is free.
-- ARGV[6], when not empty, is the waiter's previous name (a waiter takes a new name for each
-- attempt after its first): it leaves the queue, and a key a release handed to it (see
-- release.lua) counts as free for this attempt, whoever heads the queue.
-- KEYS[3], with fencing, is the fencing counter: a success then also reads it and this node's
-- clock (TIME, after the SET), in the same atomic step.
-- Returns {0} when the key was taken, {1} when it was set, {1, counter, seconds, microseconds}
-- with fencing.
local held = redis.call("GET", KEYS[1])
local handed = false
if ARGV[6] ~= "" then
	redis.call("ZREM", KEYS[2], ARGV[6])
	handed = held == ARGV[6]
end
local head = not handed and ARGV[5] == "1" and redis.call("ZRANGE", KEYS[2], 0, 0)[1]
if (held and not handed) or (head and head ~= ARGV[3]) then
	if ARGV[3] ~= "" then
		redis.call("ZADD", KEYS[2], "NX", ARGV[4], ARGV[3])
		redis.call("PEXPIRE", KEYS[2], ARGV[2])
	end
	return {0}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if ARGV[3] ~= "" then
	redis.call("ZREM", KEYS[2], ARGV[3])
end
if KEYS[3] == nil then
	return {1}
end
local now = redis.call("TIME")
return {1, redis.call("GET", KEYS[3]) or "0", now[1], now[2]}
