-- Extend a lock key: compare and PEXPIRE. KEYS: the key. ARGV: the token, the ttl in ms.
-- Returns 1 when extended, 0 when the key was absent or another's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
