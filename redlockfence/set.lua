-- Set's write, after fence.lua: KEYS[1] the key, ARGV[1] the value, ARGV[2] the ttl in
-- milliseconds (0: no expiry).
local ttl = tonumber(ARGV[2])
if ttl > 0 then
	return redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
end
return redis.call('SET', KEYS[1], ARGV[1])
