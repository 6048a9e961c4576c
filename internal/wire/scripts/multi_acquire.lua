-- LockAll, acquire. KEYS: the n keys, then their n watch marks. ARGV: the token, the ttl in ms,
-- and for a waiting call how long its mark lasts in ms ("0" for none).
-- Sets every key to the token for the ttl, or none of them when any exists; then a waiting call
-- marks every key as waited for (a release of one announces itself while its mark lives).
-- Each key is then exactly what a single-key lock stores, so both exclude each other.
-- Returns {1} when all were set, {0} when none was.
local n = #KEYS / 2
for i = 1, n do
	if redis.call("EXISTS", KEYS[i]) == 1 then
		if (tonumber(ARGV[3]) or 0) > 0 then
			for j = n + 1, 2 * n do
				redis.call("SET", KEYS[j], "1", "PX", ARGV[3])
			end
		end
		return {0}
	end
end
for i = 1, n do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
return {1}
