-- LockAll, extend. KEYS: the keys. ARGV: the token, the ttl in ms. Gives every key a new
-- TTL while each holds the token; if one does not, extends none. Returns 1 when extended, 0
-- otherwise.
for i = 1, #KEYS do
	if redis.call("GET", KEYS[i]) ~= ARGV[1] then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
