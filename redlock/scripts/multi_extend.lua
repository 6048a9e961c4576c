-- LockAll, extend: give every key of KEYS a new TTL of ARGV[2] ms while each holds token
-- ARGV[1]; if one does not, extend none. Returns 1 when extended, 0 otherwise.
for i = 1, #KEYS do
	if redis.call("GET", KEYS[i]) ~= ARGV[1] then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
