-- Handing a lock key on to the first waiter in its line (see queue.lua), the start of every
-- script that releases a lock key, so that a release that hands the key on builds no other
-- function.

-- hand gives key to the first live waiter in line, unless that is except: it takes the waiter
-- out of line, and key holds the waiter's name until its lease lapses, so that no attempt but
-- that waiter's can take it (see acquire.lua) and a waiter that is gone holds up the line no
-- longer than its lease. Waiters at the front whose lease lapsed are dropped on the way. The
-- waiter is told on its Client's channel (channel, a colon and the text of its name before the
-- first dot): the message is keyname, a newline and the waiter's name. A message only wakes the
-- waiter: what makes it the holder is its own attempt finding its name in key. A waiter far
-- back in line may hold its place longer than cap_ms (the releasing Client's lease of a place,
-- when above 0): key waits for it cap_ms at most. popped, when not nil, is what the caller's
-- ZPOPMIN of queue gave, the first to look at. Returns the waiter, or nil when it gave key to
-- nobody (and left key and the line as they were).
local function hand(queue, leases, channel, key, keyname, except, cap_ms, popped)
	for _ = 1, 1000 do
		popped = popped or redis.call("ZPOPMIN", queue)
		local name = popped[1]
		if not name then
			return nil
		end
		if name == except then
			redis.call("ZADD", queue, popped[2], name)
			return nil
		end
		local left = redis.call("PTTL", leases .. ":" .. name)
		if left > 0 then
			local cap = tonumber(cap_ms) or 0
			if cap > 0 and left > cap then
				left = cap_ms -- the argument as sent: a number passed to a call is formatted at a cost
			end
			redis.call("SET", key, name, "PX", left)
			if channel ~= "" then
				redis.call("PUBLISH", channel .. ":" .. string.match(name, "^[^.]*"), keyname .. "\n" .. name)
			end
			return name
		end
		popped = nil
	end
	return nil
end
