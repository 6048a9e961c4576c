-- Semaphore, acquire (after holders.lua). KEYS: the holders, the watch mark. ARGV: the token,
-- the ttl in ms, the permits, how long a waiting call's mark lasts in ms ("0" for none).
-- Admits the token while fewer than the permits are held by live holders on this node.
-- Returns {1} when admitted, {0} when every permit is taken (a waiting call marks watch).
local now = now_ms()
if live(KEYS[1], now) >= tonumber(ARGV[3]) then
	return refuse(KEYS[2], ARGV[4])
end
hold(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return {1}
