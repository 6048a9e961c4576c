-- Fencing, round 2: while KEYS[1] still holds token ARGV[1], raise the fencing counter KEYS[2]
-- to ARGV[2] if it is lower (both are decimal integers without leading zeros, compared exactly
-- as strings: longer is larger). Returns 1 when the key was ours, 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local c = redis.call("GET", KEYS[2]) or "0"
if #ARGV[2] > #c or (#ARGV[2] == #c and ARGV[2] > c) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1
