-- RWMutex, write unlock. KEYS: the writer's key, the mark of a waiting writer, the watch mark.
-- ARGV: the token, the channel to announce the release on ("" for none), the name in the
-- announcement, the name of the waiting writer that acquired ("" for none), whose mark goes.
-- Deletes the writer's key if it holds the token and announces it while a waiting call's watch
-- mark lives: readers and writers wait for that name. Returns 1 when the key was ours and is
-- gone, 0 otherwise.
if ARGV[4] ~= "" and redis.call("GET", KEYS[2]) == ARGV[4] then
	redis.call("DEL", KEYS[2])
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call("DEL", KEYS[1])
if ARGV[2] ~= "" and redis.call("EXISTS", KEYS[3]) == 1 then
	redis.call("PUBLISH", ARGV[2], ARGV[3] .. "\n")
end
return 1
