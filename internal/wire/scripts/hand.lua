-- Handing a lock key on to the waiters in its line, or letting it go (after queue.lua): the
-- part of the line that only releases need.

-- hand gives key to the first live waiter in line, unless that is except: it takes the waiter
-- out of line, and key holds the waiter's name until its lease lapses, so that no attempt but
-- that waiter's can take it (see acquire.lua) and a waiter that is gone holds up the line no
-- longer than its lease. Waiters at the front whose lease lapsed are dropped on the way. The
-- waiter is told on its Client's channel (channel, a colon and the text of its name before the
-- first dot): the message is keyname, a newline and the waiter's name. A message only wakes the
-- waiter: what makes it the holder is its own attempt finding its name in key. A waiter far
-- back in line may hold its place longer than cap_ms (the releasing Client's lease of a place,
-- when above 0): key waits for it cap_ms at most. Returns the waiter, or nil when it gave key to
-- nobody (and left key and the line as they were).
local function hand(queue, leases, channel, key, keyname, except, cap_ms)
	for _ = 1, 1000 do
		local popped = redis.call("ZPOPMIN", queue)
		local name = popped[1]
		if not name then
			return nil
		end
		if name == except then
			redis.call("ZADD", queue, popped[2], name)
			return nil
		end
		local left = redis.call("PTTL", lease_key(leases, name))
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
	end
	return nil
end

-- let_go lets key go: to the first live waiter in line but except (see hand) or, with nobody
-- else in line, to whoever asks first. Every Client is told that on channel (keyname and a
-- newline), unless quiet or nobody waits without a place in the line: only while a waiting
-- call's mark (watch) lives, so that an uncontended release sends no message.
local function let_go(queue, leases, channel, key, keyname, except, quiet, watch, cap_ms)
	if not hand(queue, leases, channel, key, keyname, except, cap_ms) then
		redis.call("DEL", key)
		if channel ~= "" and not quiet and redis.call("EXISTS", watch) == 1 then
			redis.call("PUBLISH", channel, keyname .. "\n")
		end
	end
end

-- release lets key go (let_go, with watch, and lease_ms as its cap_ms) when it holds token,
-- deleting the keys in also too, and returns 1; else 0. Unlock's release also takes waiter (the
-- one that acquired, or "") out of the line where it is still in it, and passes on a hand-over
-- that came to it after it had its quorum elsewhere (key holds its name): a waiter that took the
-- key left the line then. A roll-back's puts waiter (the attempt's own) back at its place for
-- lease_ms where the attempt took the key, and gives key only to another waiter: one whose turn
-- came while the failed attempt held the key must not wait for its expiry, and nobody else needs
-- telling. held, when not nil, is what key holds (false when absent), read by the caller.
local function release(key, queue, leases, watch, token, channel, keyname, waiter, rollback, place, lease_ms, also, held)
	if held == nil then
		held = redis.call("GET", key)
	end
	if held == token then
		if rollback and waiter ~= "" then
			join(queue, leases, waiter, place, lease_ms)
		end
		if #also > 0 then
			redis.call("DEL", unpack(also))
		end
		let_go(queue, leases, channel, key, keyname, rollback and waiter or nil, rollback, watch, lease_ms)
		return 1
	end
	if waiter ~= "" and not rollback then
		leave(queue, waiter)
		if held == waiter then
			let_go(queue, leases, channel, key, keyname, nil, false, watch, lease_ms)
		end
	end
	return 0
end
