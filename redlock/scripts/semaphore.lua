-- Semaphore, acquire (after holders.lua): admit token ARGV[1] to the holders KEYS[1] for ARGV[2]
-- ms while fewer than ARGV[7] permits are held by live holders on this node.
-- Returns {1} when admitted, {0} when every permit is taken.
local now = now_ms()
if live(KEYS[1], now) >= tonumber(ARGV[7]) then
	return {0}
end
hold(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return {1}
