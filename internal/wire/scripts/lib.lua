-- What several scripts share: the start of those that read a node's clock or raise a fencing
-- counter (before holders.lua's, when they read holders).

-- now_ms reads the node's clock (TIME) in ms: a node decides expiry by its own clock, never by
-- a client's.
local function now_ms()
	local t = redis.call("TIME")
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- raise raises the fencing counter to fence if it is lower: both are decimal integers without
-- leading zeros, compared exactly as strings (longer is larger), never as Lua's floats.
local function raise(counter, fence)
	local c = redis.call("GET", counter) or "0"
	if #fence > #c or (#fence == #c and fence > c) then
		redis.call("SET", counter, fence)
	end
end
