-- Inspect a key, reading only. KEYS: the lock key, its fencing counter, an RWMutex's writer, its
-- readers, a Semaphore's holders, an election's value. Returns {the lock key's value or "",
-- its TTL in ms, the counter or "0", the writer's token or "", the writer's TTL, the live
-- readers and their TTLs, the live holders and their TTLs, the value or ""}: each list a flat
-- array of token, ms.
local function live(set)
	local t = redis.call("TIME")
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	local out = {}
	local entries = redis.call("ZRANGEBYSCORE", set, "(" .. now, "+inf", "WITHSCORES")
	for i = 1, #entries, 2 do
		out[#out + 1] = entries[i]
		out[#out + 1] = tostring(math.floor(tonumber(entries[i + 1]) - now))
	end
	return out
end
return {
	redis.call("GET", KEYS[1]) or "", redis.call("PTTL", KEYS[1]),
	redis.call("GET", KEYS[2]) or "0",
	redis.call("GET", KEYS[3]) or "", redis.call("PTTL", KEYS[3]),
	live(KEYS[4]), live(KEYS[5]),
	redis.call("GET", KEYS[6]) or "",
}
