-- Fencing, round 2. KEYS: the lock key, its fencing counter. ARGV: the token, the fencing
-- token. While the key still holds the token, raises the counter to the fencing token if it
-- is lower (both are decimal integers without leading zeros, compared exactly as strings:
-- longer is larger). Returns 1 when the key was ours, 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local c = redis.call("GET", KEYS[2]) or "0"
if #ARGV[2] > #c or (#ARGV[2] == #c and ARGV[2] > c) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1
