-- Release a lock key (after hand.lua, release_alone.lua, queue.lua and let_go.lua): compare
-- and let go, as let_go.lua's release says, with what the key held and the line gave as
-- release_alone.lua read them.
-- KEYS: the lock key, its queue, its leases, its watch mark. ARGV: the token, the channel to
-- announce the release on ("" for none), the key's name in the announcement, the waiter's name
-- (Unlock's: the one that acquired; a roll-back's: the attempt's own; "" for none), "rollback"
-- for a failed attempt's roll-back, the waiter's place (for a roll-back), and the Client's lease
-- of a place in ms (a roll-back's waiter's, and the cap of a hand-over: hand.lua's hand).
-- Returns 1 when the key held the token and is let go, 0 when it was absent or another's.
return release(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5] == "rollback", ARGV[6], ARGV[7], {}, held, popped)
