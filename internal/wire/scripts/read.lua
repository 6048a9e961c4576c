-- RWMutex, read lock (after holders.lua). KEYS: the writer's key, the readers (holders), the
-- mark of a waiting writer, the watch mark. ARGV: the token, the ttl in ms, how long a waiting
-- call's mark lasts in ms ("0" for none).
-- Admits the reader unless a writer holds the lock or waits for it, so that a stream of readers
-- cannot starve a writer. Returns {1} when admitted, {0} otherwise (a waiting call marks watch).
if redis.call("EXISTS", KEYS[1]) == 1 or redis.call("EXISTS", KEYS[3]) == 1 then
	return refuse(KEYS[4], ARGV[3])
end
local now = now_ms()
live(KEYS[2], now) -- drops the expired readers, so that a stream of readers keeps the set small
hold(KEYS[2], ARGV[1], now, tonumber(ARGV[2]))
return {1}
