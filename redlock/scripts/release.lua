-- Compare-and-delete: remove KEYS[1] only while it holds this acquisition's token ARGV[1], and
-- announce the release on channel ARGV[2] (the key as message) unless ARGV[2] is empty.
-- Returns 1 when the key was ours and is gone, 0 when it was absent or someone else's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	if ARGV[2] ~= "" then
		redis.call("PUBLISH", ARGV[2], KEYS[1])
	end
	return 1
end
return 0
