-- The start of release.lua, before the line's functions (queue.lua, hand.lua): an Unlock of a
-- key that nobody waits for (no line, no mark of a waiting call) deletes it at once, without
-- building those functions, which would cost such a release a third of its time. held is what
-- the key holds, for the rest of the script.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] and ARGV[5] ~= "rollback" and redis.call("EXISTS", KEYS[2], KEYS[4]) == 0 then
	redis.call("DEL", KEYS[1])
	return 1
end
