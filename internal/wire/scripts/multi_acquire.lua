-- LockAll, acquire. KEYS: the keys. ARGV: the token, the ttl in ms.
-- Sets every key to the token for the ttl, or none of them when any exists. Each key is then
-- exactly what a single-key lock stores, so both exclude each other.
-- Returns {1} when all were set, {0} when none was.
for i = 1, #KEYS do
	if redis.call("EXISTS", KEYS[i]) == 1 then
		return {0}
	end
end
for i = 1, #KEYS do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
return {1}
