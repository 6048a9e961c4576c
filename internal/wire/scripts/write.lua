-- RWMutex, write lock (after holders.lua). KEYS: the writer's key, the readers, the mark of a
-- waiting writer, the watch mark. ARGV: the token, the ttl in ms, the waiting writer's name (""
-- for none), how long a waiting call's watch mark lasts in ms ("0" for none).
-- Sets the writer's key to the token for the ttl when no writer and no live reader holds the
-- lock. Otherwise a waiting writer marks the lock for the ttl unless another waiting writer
-- has: new readers then wait. Getting the lock takes its own mark away.
-- Returns {1} when set, {0} otherwise.
if redis.call("EXISTS", KEYS[1]) == 1 or live(KEYS[2], now_ms()) > 0 then
	if ARGV[3] ~= "" then
		local mark = redis.call("GET", KEYS[3])
		if not mark or mark == ARGV[3] then
			redis.call("SET", KEYS[3], ARGV[3], "PX", ARGV[2])
		end
	end
	return refuse(KEYS[4], ARGV[4])
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if ARGV[3] ~= "" and redis.call("GET", KEYS[3]) == ARGV[3] then
	redis.call("DEL", KEYS[3])
end
return {1}
