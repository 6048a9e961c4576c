-- Acquire a lock key for a waiter, or with fencing (after acquire_handed.lua, hand.lua and
-- queue.lua).
-- KEYS: the lock key, its queue, its leases, and with fencing its counter.
-- ARGV: the token, the ttl in ms, the waiter's name ("" for none), its place, its lease in ms
-- when first in line, and when behind another waiter (see join), the channel of the Clients'
-- hand-overs, the key's name in their messages (see first), and "lease" when the waiter's
-- place needs a lease (see hand.lua's hears).
-- The key is set to the token for the ttl when it is free and, for a waiter, no live waiter is
-- ahead of it in line, or when a release gave it to this waiter (it holds the waiter's name,
-- and the release took the waiter out of line); otherwise a waiter joins the line (or renews
-- its place), and a free key with a live waiter ahead goes to that waiter (see first).
-- A waiter that takes the key is out of line; if its attempt fails on the other nodes, the
-- roll-back puts it back at its place.
-- Returns {0} when refused ({0, n, ms} to a waiter: n is 1 when a waiter is ahead of it in
-- line, 0 when it is first, and the key has ms milliseconds left, or -2 when free, -1 when
-- not read: a waiter behind another waits for its turn, not for the key's expiry), {1} when
-- set, and with fencing {1, counter, seconds, microseconds}: the counter and this node's clock,
-- read in the same step.
local leases = ARGV[9] == "lease" and KEYS[3] or nil
if name ~= "" and held ~= name then
	if held then
		if join(KEYS[2], leases, name, ARGV[4], ARGV[5], ARGV[6]) > 0 then
			return {0, 1, -1}
		end
		return {0, 0, redis.call("PTTL", KEYS[1])}
	end
	if first(KEYS[2], KEYS[3], ARGV[7], KEYS[1], ARGV[8], name, ARGV[4], ARGV[5]) then
		join(KEYS[2], leases, name, ARGV[4], ARGV[5], ARGV[6])
		return {0, 1, -2}
	end
elseif held and name == "" then
	return {0}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if KEYS[4] == nil then
	return {1}
end
local t = redis.call("TIME")
return {1, redis.call("GET", KEYS[4]) or "0", t[1], t[2]}
