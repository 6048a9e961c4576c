-- The waiters' queue of a lock, the start of every script that reads it. The queue is a sorted
-- set of waiter names by each waiter's place in line. A waiter is live while its Client hears
-- this node's messages (see hand.lua); a waiter of a cluster's Client also holds a lease, a key
-- of its own, the leases key's name, a colon and the waiter's name (in the lock key's hash
-- slot, as the leases key's tag puts it), that lives as long as the lease and that each attempt
-- renews. A waiter that leaves the line is taken out of the queue (ZREM); one that is gone is
-- dropped when a hand-over reaches it. The queue lives as long as the longest place that an
-- attempt renewed, so that it does not outlive its waiters.

-- take_turn is the attempt of waiter self, whose place is place, on a free key: when a live
-- waiter is ahead of self in line, it hands the key to that waiter (hand.lua's hand, for self's
-- lease lease_ms: a key left free with waiters in line is a hand-over that nobody made, as when
-- its holder's lease ran out) and returns that waiter. Else self may take the key: it is out
-- of line, and take_turn returns nil.
local function take_turn(queue, leases, channel, key, keyname, self, place, lease_ms)
	local front = redis.call("ZRANGE", queue, 0, 0)[1]
	if not front then
		return nil
	end
	if front ~= self then
		redis.call("ZADD", queue, "NX", place, self) -- self may have begun first
		local name = hand(queue, leases, channel, key, keyname, self, lease_ms)
		if name then
			return name
		end
	end
	redis.call("ZREM", queue, self)
	return nil
end

-- join puts name in line at place (or keeps its place), and for a cluster's Client (leases not
-- nil) renews its lease: for lease (ms, as the script's argument: a number passed to a call is
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
