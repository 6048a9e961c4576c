-- Election, extend a term. KEYS: the lock key, the value. ARGV: the token, the ttl in ms.
-- While the lock key holds the token, give it and the value a new TTL. Returns 1 when extended,
-- 0 when the key was absent or another's.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("PEXPIRE", KEYS[1], ARGV[2])
if redis.call("EXISTS", KEYS[2]) == 1 then
	redis.call("PEXPIRE", KEYS[2], ARGV[2])
end
return 1
