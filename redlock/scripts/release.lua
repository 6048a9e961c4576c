-- Compare-and-delete: remove KEYS[1] only while it holds this acquisition's token ARGV[1].
-- Returns 1 when the key was ours and is gone, 0 when it was absent or someone else's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
