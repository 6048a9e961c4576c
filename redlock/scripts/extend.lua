-- Compare-and-PEXPIRE: give KEYS[1] a new TTL of ARGV[2] ms only while it holds token ARGV[1].
-- Returns 1 when extended, 0 when the key was absent or someone else's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
