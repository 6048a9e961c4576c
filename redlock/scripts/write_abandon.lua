-- RWMutex, a waiting writer gives up: KEYS as write.lua's. Take away the mark of waiter ARGV[1]
-- and announce on channel ARGV[2] that readers may enter (they wait for the name KEYS[1]).
if redis.call("GET", KEYS[3]) == ARGV[1] then
	redis.call("DEL", KEYS[3])
	redis.call("PUBLISH", ARGV[2], KEYS[1] .. "\n")
end
return 1
