-- Election, end a term (after hand.lua, queue.lua and let_go.lua): release.lua's release of the lock key,
-- which also deletes the value and announces that there is no leader to every Client.
-- KEYS: the lock key, its queue, its leases, the value, the watch mark. ARGV: as release.lua's,
-- but the value's name in the announcements comes before "rollback" (and the waiter's place,
-- lease and "lease" after it). A failed campaign's roll-back announces no end: there was no
-- term.
-- Returns 1 when the key held the token and is deleted, 0 when it was absent or another's.
local rollback = ARGV[6] == "rollback"
local done = release(KEYS[1], KEYS[2], KEYS[3], KEYS[5], ARGV[1], ARGV[2], ARGV[3], ARGV[4], rollback, ARGV[7], ARGV[8], ARGV[9] == "lease", {KEYS[4]})
if done == 1 and ARGV[2] ~= "" and not rollback then
	redis.call("PUBLISH", ARGV[2], ARGV[5] .. "\n")
end
return done
