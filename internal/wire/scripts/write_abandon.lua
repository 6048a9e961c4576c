-- RWMutex, a waiting writer gives up. KEYS: the mark of a waiting writer, the watch mark. ARGV:
-- the writer's name, the channel, the name in the announcement. Takes the writer's mark away
-- and announces that readers may enter, while a waiting call's watch mark lives. Returns 1.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	if redis.call("EXISTS", KEYS[2]) == 1 then
		redis.call("PUBLISH", ARGV[2], ARGV[3] .. "\n")
	end
end
return 1
