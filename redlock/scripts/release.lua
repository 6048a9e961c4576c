-- Compare-and-delete: release KEYS[1] only while it holds this acquisition's token ARGV[1], or
-- the name ARGV[3] of the waiter that acquired it (a release may have handed the key to that
-- name after the waiter had won it elsewhere). ARGV[3] may be absent or empty.
-- Unless ARGV[2] is empty (a roll-back), the release is announced, and ARGV[3] leaves the key's
-- queue KEYS[2] first, whether or not the key is still ours. The first waiter in the queue is
-- taken off it and named: a waiter's name is its Client's id, a dot, a number, and for a waiter
-- that takes a hand-over a dot and its ttl in ms. The announcement goes to that Client's
-- channel, ARGV[2] .. ":" .. id, as the key, a newline and the name; only that waiter wakes, so
-- that the contenders do not all try at once.
-- A waiter with a ttl in its name is handed the key: it is set to the waiter's name for that
-- ttl, and the announcement ends in a newline and "handed", from which the waiter learns it.
-- If no subscriber of the waiter's Client heard it on this node, the Client is gone, and the
-- next waiter is tried. Any other
-- waiter is woken and the key deleted; with the queue empty, the key is deleted and the
-- announcement goes to ARGV[2], which every Client hears, with nothing after the newline.
-- With ARGV[4] "1" (a roll-back's), the key is handed over likewise, but nobody is woken: a
-- waiter that takes no hand-overs stays first in the queue, and with none the key is deleted.
-- Returns 1 when the key was ours, 0 when it was absent or someone else's.
local waiter = ARGV[3] or ""
local quiet = ARGV[4] == "1"
if ARGV[2] ~= "" and waiter ~= "" then
	redis.call("ZREM", KEYS[2], waiter)
end
local held = redis.call("GET", KEYS[1])
if held ~= ARGV[1] and (waiter == "" or held ~= waiter) then
	return 0
end
if ARGV[2] == "" then
	redis.call("DEL", KEYS[1])
	return 1
end
while true do
	local next
	if quiet then
		next = redis.call("ZRANGE", KEYS[2], 0, 0)[1]
	else
		next = redis.call("ZPOPMIN", KEYS[2])[1]
	end
	local ttl = next and string.match(next, "^[^.]*%.[^.]*%.(%d+)$")
	if not ttl then
		redis.call("DEL", KEYS[1])
		if quiet then
			return 1
		end
		if next then
			redis.call("PUBLISH", ARGV[2] .. ":" .. string.match(next, "^[^.]*"), KEYS[1] .. "\n" .. next)
		else
			redis.call("PUBLISH", ARGV[2], KEYS[1] .. "\n")
		end
		return 1
	end
	if quiet then
		redis.call("ZREM", KEYS[2], next)
	end
	-- Set before telling: the waiter must never hear of a hand-over that did not happen.
	redis.call("SET", KEYS[1], next, "PX", ttl)
	local channel = ARGV[2] .. ":" .. string.match(next, "^[^.]*")
	if redis.call("PUBLISH", channel, KEYS[1] .. "\n" .. next .. "\nhanded") > 0 then
		return 1
	end
end
