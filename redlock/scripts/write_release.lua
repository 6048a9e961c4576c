-- RWMutex, write unlock: KEYS[1] is the writer's key, KEYS[2] the mark of a waiting writer.
-- Take away the mark of ARGV[3], the waiter that acquired (if given), then delete KEYS[1] if it
-- holds token ARGV[1] and, unless ARGV[2] is "", announce the release of KEYS[1] on channel
-- ARGV[2], waking every waiter (readers and writers wait for that name).
-- Returns 1 when the key was ours and is gone, 0 otherwise.
if ARGV[3] and ARGV[3] ~= "" and redis.call("GET", KEYS[2]) == ARGV[3] then
	redis.call("DEL", KEYS[2])
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[1])
if ARGV[2] ~= "" then
	redis.call("PUBLISH", ARGV[2], KEYS[1] .. "\n")
end
return 1
