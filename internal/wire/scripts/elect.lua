-- Election, the new term's second round and Proclaim (after lib.lua). KEYS: the election's lock key, its
-- fencing counter, its value. ARGV: the token, the term (a fencing token), the value's version,
-- the value, the channel to announce the change on, the name in the announcement.
-- While the lock key holds the token: raise the counter to the term (as fence.lua does), store
-- the term, the version and the value (each followed by a newline but the value) for as long
-- as the lock key lives, and announce the change to every Client. Returns 1 when the key was
-- ours, 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
raise(KEYS[2], ARGV[2])
local ttl = redis.call("PTTL", KEYS[1])
if ttl > 0 then
	redis.call("SET", KEYS[3], ARGV[2] .. "\n" .. ARGV[3] .. "\n" .. ARGV[4], "PX", ttl)
end
redis.call("PUBLISH", ARGV[5], ARGV[6] .. "\n")
return 1
