-- The start of release.lua (after hand.lua, before queue.lua and let_go.lua, whose functions it
-- need not build): Unlock's release hands the key to the first live waiter in line, or, with
-- nobody in line and no waiting call's mark either, deletes it. held is what the key holds,
-- and popped what the line gave (see hand.lua), for the rest of the script.
local held = redis.call("GET", KEYS[1])
local popped
if held == ARGV[1] and ARGV[5] ~= "rollback" then
	popped = redis.call("ZPOPMIN", KEYS[2])
	if popped[1] then
		if hand(KEYS[2], KEYS[3], ARGV[2], KEYS[1], ARGV[3], nil, ARGV[7], popped) then
			return 1
		end
		popped = {} -- every waiter in line was gone: the line is empty now
	end
	if redis.call("EXISTS", KEYS[4]) == 0 then
		redis.call("DEL", KEYS[1])
		return 1
	end
end
