-- Semaphore, acquire (after holders.lua). KEYS: the holders. ARGV: the token, the ttl in ms,
-- the permits. Admits the token while fewer than the permits are held by live holders on this
-- node. Returns {1} when admitted, {0} when every permit is taken.
local now = now_ms()
if live(KEYS[1], now) >= tonumber(ARGV[3]) then
	return {0}
end
hold(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return {1}
