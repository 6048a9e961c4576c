-- The start of acquire.lua (before queue.lua, whose functions it need not build): a waiter
-- takes a key a release handed to it (the key holds its name), unless fencing needs the rest.
-- name and held are the waiter and what the key holds, for the rest of the script.
local name = ARGV[3]
local held = redis.call("GET", KEYS[1])
if name ~= "" and held == name and KEYS[4] == nil then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
	return {1}
end
