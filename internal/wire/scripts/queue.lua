-- The waiters' queue of a lock, the start of every script that reads it. The queue is a sorted
-- set of waiter names by each waiter's place in line. A waiter is live while its Client hears
-- this node's messages (see hand.lua); a waiter of a cluster's Client also holds a lease, a key
-- of its own, the leases key's name, a colon and the waiter's name (in the lock key's hash
-- slot, as the leases key's tag puts it), that lives as long as the lease and that each attempt
-- renews. A waiter that leaves the line is taken out of the queue (ZREM); one that is gone is
-- dropped when a hand-over, or an attempt on the free key, reaches it. The queue lives as long
-- as the longest place that an attempt renewed, so that it does not outlive its waiters.

-- first is the attempt of waiter self, whose place is place, on the free key: the first live
-- waiter ahead of self in line (see hand.lua's hears, asked with keyname as the message, which
-- wakes nobody) is taken out of line and handed the key for cap_ms, as a release would have
-- (its holder let it expire), and returned; those ahead of it that are not live are dropped.
-- The waiter is not woken: it takes the key at its own next attempt, which comes when the
-- nodes said the key would expire (woken now, it could come before the key expired elsewhere),
-- and one that does not come holds the key up for cap_ms. When no live waiter is ahead of
-- self, first takes self out of line and returns nil.
local function first(queue, leases, channel, key, keyname, self, place, cap_ms)
	local front = redis.call("ZRANGE", queue, 0, 0)[1]
	if not front then
		return nil
	end
	if front ~= self then
		redis.call("ZADD", queue, "NX", place, self) -- self may have begun first
	end
	for _ = 1, 1000 do
		local name = redis.call("ZRANGE", queue, 0, 0)[1]
		if not name or name == self then
			break
		end
		redis.call("ZREM", queue, name)
		if hears(leases, channel, name, keyname) then
			redis.call("SET", key, name, "PX", cap_ms)
			return name
		end
	end
	redis.call("ZREM", queue, self)
	return nil
end

-- join puts name in line at place (or keeps its place), and when leases is not nil (see
-- hand.lua's hears) renews its lease: for lease (ms, as the script's argument: a number passed to a call is
-- formatted at a cost) when it is first in line, for behind (when above 0) when another waiter
-- is ahead of it, so that a waiter far back need not renew its place as often. The queue is
-- kept at least that long (twice as long when it needs more, so that most joins need not renew
-- it). Returns how many waiters are ahead of name.
local function join(queue, leases, name, place, lease, behind)
	redis.call("ZADD", queue, "NX", place, name)
	local ahead = redis.call("ZRANK", queue, name)
	if ahead > 0 and behind and tonumber(behind) > 0 then
		lease = behind
	end
	if leases then
		redis.call("SET", leases .. ":" .. name, "1", "PX", lease)
	end
	local ms = tonumber(lease)
	if redis.call("PTTL", queue) < ms then
		redis.call("PEXPIRE", queue, 2 * ms)
	end
	return ahead
end
