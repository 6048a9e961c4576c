-- A waiter gives up (after hand.lua, queue.lua and let_go.lua): it leaves the line, and what
-- was its turn goes on: the key, when a release gave it to this waiter or it was first and the
-- key is free, goes to the next live waiter (let_go.lua's let_go), or with nobody left in line
-- is let go.
-- KEYS: the lock key, its queue, its leases, its watch mark. ARGV: the waiter's name, the
-- channel, the key's name in the announcement, the Client's lease of a place (the cap of a
-- hand-over, see hand.lua's hand). Returns 1.
local front = redis.call("ZRANGE", KEYS[2], 0, 0)[1]
redis.call("ZREM", KEYS[2], ARGV[1])
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] or (front == ARGV[1] and not held) then
	let_go(KEYS[2], KEYS[3], ARGV[2], KEYS[1], ARGV[3], nil, false, KEYS[4], ARGV[4])
end
return 1
