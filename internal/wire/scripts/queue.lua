-- The waiters' queue of a lock, the start of every script that reads it. The queue is a sorted
-- set of waiter names by each waiter's place in line; each waiter's lease is a key of its own,
-- the leases key's name, a colon and the waiter's name (in the lock key's hash slot, as the
-- leases key's tag puts it), that lives as long as the lease. A waiter renews its lease with
-- every attempt; one whose lease lapsed has moved on (it gave up, crashed, or took a new name)
-- and is dropped, so that it never blocks the line.

local function lease_key(leases, name)
	return leases .. ":" .. name
end

-- first drops the waiters at the front whose lease lapsed and returns the first live one, or
-- nil, and the ms its lease has left. self, when not nil, is the waiter of the calling attempt:
-- live, since it is asking, so that a line it heads costs no lease read (and no ms is returned).
local function first(queue, leases, self)
	for _ = 1, 1000 do
		local name = redis.call("ZRANGE", queue, 0, 0)[1]
		if not name or name == self then
			return name
		end
		local left = redis.call("PTTL", lease_key(leases, name))
		if left > 0 then
			return name, left
		end
		redis.call("ZREM", queue, name)
	end
	return nil
end

-- join puts name in line at place (or keeps its place) and renews its lease for lease_ms. The
-- queue is kept at least that long (twice as long when it needs more, so that most joins need
-- not renew it).
local function join(queue, leases, name, place, lease_ms)
	redis.call("ZADD", queue, "NX", place, name)
	redis.call("SET", lease_key(leases, name), "1", "PX", lease_ms)
	if redis.call("PTTL", queue) < lease_ms then
		redis.call("PEXPIRE", queue, 2 * lease_ms)
	end
end

-- leave takes name out of line; its lease key lapses on its own (a roll-back that puts name
-- back at its place renews it).
local function leave(queue, name)
	redis.call("ZREM", queue, name)
end

-- hand gives key to the first live waiter in line, unless that is except: key holds the
-- waiter's name until its lease lapses, so that no attempt but that waiter's can take it (see
-- acquire.lua) and a waiter that is gone holds up the line no longer than its lease. The waiter
-- is told on its Client's channel (channel, a colon and the text of its name before the first
-- dot): the message is keyname, a newline and the waiter's name. A message only wakes the
-- waiter: what makes it the holder is its own attempt finding its name in key. A waiter far
-- back in line may hold its place longer than cap_ms (the releasing Client's lease of a place,
-- when above 0): key waits for it, and its place lasts, cap_ms at most then. Returns the waiter,
-- or nil when it gave key to nobody (and left key as it was).
local function hand(queue, leases, channel, key, keyname, except, cap_ms)
	local name, left = first(queue, leases)
	if not name or name == except then
		return nil
	end
	if cap_ms and cap_ms > 0 and left > cap_ms then
		left = cap_ms
		redis.call("PEXPIRE", lease_key(leases, name), cap_ms)
	end
	redis.call("SET", key, name, "PX", left)
	if channel ~= "" then
		redis.call("PUBLISH", channel .. ":" .. string.match(name, "^[^.]*"), keyname .. "\n" .. name)
	end
	return name
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
-- telling.
local function release(key, queue, leases, watch, token, channel, keyname, waiter, rollback, place, lease_ms, also)
	local held = redis.call("GET", key)
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
