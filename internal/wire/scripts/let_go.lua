-- Letting a lock key go, to the next waiter in line or to whoever asks first (after hand.lua and
-- queue.lua).

-- let_go lets key go: to the first live waiter in line but except (see hand) or, with nobody
-- else in line, to whoever asks first. Every Client is told that on channel (keyname and a
-- newline), unless quiet or nobody waits without a place in the line: only while a waiting
-- call's mark (watch) lives, so that an uncontended release sends no message.
local function let_go(queue, leases, channel, key, keyname, except, quiet, watch, cap_ms, popped)
	if not hand(queue, leases, channel, key, keyname, except, cap_ms, popped) then
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
-- telling; leased says whether that waiter's place needs a lease (see hand.lua's hears). held,
-- when not nil, is what key holds (false when absent), read by the caller, and popped what its
-- ZPOPMIN of queue gave.
local function release(key, queue, leases, watch, token, channel, keyname, waiter, rollback, place, lease_ms, leased, also, held, popped)
	if held == nil then
		held = redis.call("GET", key)
	end
	if held == token then
		if rollback and waiter ~= "" then
			join(queue, leased and leases or nil, waiter, place, lease_ms)
		end
		if #also > 0 then
			redis.call("DEL", unpack(also))
		end
		let_go(queue, leases, channel, key, keyname, rollback and waiter or nil, rollback, watch, lease_ms, popped)
		return 1
	end
	if waiter ~= "" and not rollback then
		redis.call("ZREM", queue, waiter)
		if held == waiter then
			let_go(queue, leases, channel, key, keyname, nil, false, watch, lease_ms)
		end
	end
	return 0
end
