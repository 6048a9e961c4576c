-- Handing a lock key on to the first waiter in its line (see queue.lua), the start of every
-- script that releases a lock key, so that a release that hands the key on builds no other
-- function.

-- hears reports whether waiter name hears this node: whether its Client heard message on its
-- channel (channel, a colon and the text of name before the first dot: PUBLISH counts the
-- Clients that did) or else whether its lease lives (leases, a colon and name): a Client of a
-- cluster, whose PUBLISH counts only the subscribers of the master that publishes, gives its
-- waiters leases. A waiter that does neither has moved on: its process ended, or its
-- connection to this node did. A message without a newline wakes nobody (see
-- wire.ParseAnnouncement): it only asks.
local function hears(leases, channel, name, message)
	if channel ~= "" and redis.call("PUBLISH", channel .. ":" .. string.match(name, "^[^.]*"), message) > 0 then
		return true
	end
	return redis.call("PTTL", leases .. ":" .. name) > 0
end

-- hand gives key to the first live waiter in line (see hears), unless that is except: it takes
-- the waiter out of line, and key holds the waiter's name for cap_ms (the releasing Client's
-- lease of a place), so that no attempt but that waiter's can take it (see acquire.lua) and a
-- waiter that does not come holds up the line one lease at most. The waiter is told on its
-- Client's channel: the message is keyname, a newline and the waiter's name. A message only
-- wakes the waiter: what makes it the holder is its own attempt finding its name in key.
-- Waiters that are not live are dropped on the way. popped, when not nil, is what the caller's
-- ZPOPMIN of queue gave, the first to look at. Returns the waiter, or nil when it gave key to
-- nobody: the line is as it was then, but key may hold the name of a waiter that was dropped,
-- and the caller deletes or sets it.
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
		redis.call("SET", key, name, "PX", cap_ms)
		if hears(leases, channel, name, keyname .. "\n" .. name) then
			return name
		end
		popped = nil
	end
	return nil
end
