-- The waiters' queue of a lock, the start of every script that reads it. A queue is two sorted
-- sets of waiter names: one by each waiter's place in line, one by when its lease lapses (ms on
-- this node's clock). A waiter renews its lease with every attempt; one whose lease lapsed has
-- moved on (it gave up, crashed, or took a new name) and is dropped, so that it never blocks
-- the line.

-- first drops the waiters at the front whose lease lapsed by now (read from the clock when nil
-- and someone is in line: TIME is the dearest call of an uncontended release) and returns the
-- first live one, or nil, and now (nil if it was nil and nobody was in line). self, when not
-- nil, is the waiter of the calling attempt: live, since it is asking, so that a line it heads
-- costs no clock or lease read.
local function first(queue, leases, now, self)
	for _ = 1, 1000 do
		local name = redis.call("ZRANGE", queue, 0, 0)[1]
		if not name or name == self then
			return name, now
		end
		now = now or now_ms()
		local lapse = redis.call("ZSCORE", leases, name)
		if lapse and tonumber(lapse) > now then
			return name, now
		end
		redis.call("ZREM", queue, name)
		redis.call("ZREM", leases, name)
	end
	return nil, now
end

-- join puts name in line at place (or keeps its place) and renews its lease for lease_ms; both
-- sets are kept at least that long. The two hold the same names and only join gives them a
-- ttl, both at once, so the queue's tells the ttl of both.
local function join(queue, leases, name, place, lease_ms, now)
	redis.call("ZADD", queue, "NX", place, name)
	redis.call("ZADD", leases, now + lease_ms, name)
	if redis.call("PTTL", queue) < lease_ms then
		redis.call("PEXPIRE", queue, lease_ms)
		redis.call("PEXPIRE", leases, lease_ms)
	end
end

local function leave(queue, leases, name)
	redis.call("ZREM", queue, name)
	redis.call("ZREM", leases, name)
end

-- tell names key to the first live waiter in line, unless that is except, on its Client's
-- channel (channel, a colon and the text of the name before its first dot): the message is the
-- key's name, a newline and the waiter's name. Returns the first live waiter, or nil. now is
-- as first's.
local function tell(queue, leases, channel, key, except, now)
	local name = first(queue, leases, now)
	if name and name ~= except then
		redis.call("PUBLISH", channel .. ":" .. string.match(name, "^[^.]*"), key .. "\n" .. name)
	end
	return name
end

-- announce tells whoever may take key next that it is free: the first live waiter in line or,
-- with nobody in line, every Client on channel (the key's name and a newline). A message only
-- wakes a waiter; it never makes one a holder.
local function announce(queue, leases, channel, key, now)
	if not tell(queue, leases, channel, key, nil, now) then
		redis.call("PUBLISH", channel, key .. "\n")
	end
end

-- release deletes key, and the keys in also, when key holds token, and tells of it on channel
-- ("" for nobody). Unlock's release takes waiter (the one that acquired, or "") out of line and
-- announces; a roll-back's keeps waiter (the attempt's own) in line and tells only the first
-- live waiter, if another: one whose turn came while the failed attempt held the key must not
-- wait for its expiry. Returns 1 when it deleted key, 0 when key was absent or another's.
local function release(key, queue, leases, token, channel, name, waiter, rollback, also)
	if waiter ~= "" and not rollback then
		leave(queue, leases, waiter)
	end
	if redis.call("GET", key) ~= token then
		return 0
	end
	redis.call("DEL", key, unpack(also))
	if channel ~= "" and rollback then
		tell(queue, leases, channel, name, waiter, nil)
	elseif channel ~= "" then
		announce(queue, leases, channel, name, nil)
	end
	return 1
end
