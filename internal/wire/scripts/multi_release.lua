-- LockAll, release (after hand.lua, queue.lua and let_go.lua). KEYS: n keys, then their n
-- queues, their n leases, and their n watch marks.
-- ARGV: the token, the channel to announce each release on ("" for none), "rollback" for a
-- failed attempt's roll-back, the Client's lease of a place in ms (the cap of a hand-over, see
-- hand.lua's hand), then the n names in the announcements. Releases each key as release.lua
-- does. Returns 1 when the keys were ours, 0 otherwise.
local n = #KEYS / 4
local cap = ARGV[4]
local rollback = ARGV[3] == "rollback"
local held = 0
for i = 1, n do
	held = math.max(held, release(KEYS[i], KEYS[n + i], KEYS[2 * n + i], KEYS[3 * n + i], ARGV[1], ARGV[2], ARGV[4 + i], "", rollback, nil, cap, false, {}))
end
return held
