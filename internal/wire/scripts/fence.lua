-- Fencing, round 2 (after lib.lua). KEYS: the lock key, its fencing counter. ARGV: the token,
-- the fencing token. While the key still holds the token, raises the counter to the fencing
-- token if it is lower. Returns 1 when the key was ours, 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
raise(KEYS[2], ARGV[2])
return 1
