-- RWMutex, write lock (after holders.lua): KEYS[1] is the writer's key, KEYS[2] the readers,
-- KEYS[3] the mark of a waiting writer. SET KEYS[1] to token ARGV[1] for ARGV[2] ms when no
-- writer and no live reader holds the lock. Otherwise a waiting writer, ARGV[3] (not "": only a
-- waiting Lock call names itself), marks the lock for ARGV[2] ms unless another waiting writer
-- has: new readers then wait. Getting the lock takes its own mark away.
-- Returns {1} when set, {0} otherwise.
if redis.call("EXISTS", KEYS[1]) == 1 or live(KEYS[2], now_ms()) > 0 then
	if ARGV[3] ~= "" then
		local mark = redis.call("GET", KEYS[3])
		if not mark or mark == ARGV[3] then
			redis.call("SET", KEYS[3], ARGV[3], "PX", ARGV[2])
		end
	end
	return {0}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if ARGV[3] ~= "" and redis.call("GET", KEYS[3]) == ARGV[3] then
	redis.call("DEL", KEYS[3])
end
return {1}
