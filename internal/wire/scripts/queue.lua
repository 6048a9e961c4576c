-- The waiters' queue of a lock, the start of every script that reads it. The queue is a sorted
-- set of waiter names by each waiter's place in line; each waiter's lease is a key of its own,
-- the leases key's name, a colon and the waiter's name (in the lock key's hash slot, as the
-- leases key's tag puts it), that lives as long as the lease. A waiter renews its lease with
-- every attempt; one whose lease lapsed has moved on (it gave up, crashed, or took a new name)
-- and is dropped, so that it never blocks the line. A waiter that leaves the line is taken out
-- of the queue (ZREM); its lease key lapses on its own (a roll-back that puts it back at its
-- place renews it).

-- first drops the waiters at the front whose lease lapsed and returns the first live one, or
-- nil. self, when not nil, is the waiter of the calling attempt: live, since it is asking, so
-- that a line it heads costs no lease read. (A release pops the line instead: hand.lua.)
local function first(queue, leases, self)
	for _ = 1, 1000 do
		local name = redis.call("ZRANGE", queue, 0, 0)[1]
		if not name or name == self then
			return name
		end
		if redis.call("PTTL", leases .. ":" .. name) > 0 then
			return name
		end
		redis.call("ZREM", queue, name)
	end
	return nil
end

-- join puts name in line at place (or keeps its place) and renews its lease: for lease (ms, as
-- the script's argument: a number passed to a call is formatted at a cost) when it is first in
-- line, for behind (when above 0) when another waiter is ahead of it, so that a waiter far back
-- need not renew its place as often. The queue is kept at least that long (twice as long when
-- it needs more, so that most joins need not renew it). Returns how many waiters are ahead of
-- name.
local function join(queue, leases, name, place, lease, behind)
	redis.call("ZADD", queue, "NX", place, name)
	local ahead = redis.call("ZRANK", queue, name)
	if ahead > 0 and behind and tonumber(behind) > 0 then
		lease = behind
	end
	redis.call("SET", leases .. ":" .. name, "1", "PX", lease)
	local ms = tonumber(lease)
	if redis.call("PTTL", queue) < ms then
		redis.call("PEXPIRE", queue, 2 * ms)
	end
	return ahead
end
