-- Holders: a sorted set of tokens, each scored by when it expires on this node's clock (TIME,
-- in ms), so that a node decides expiry by its own clock, never by a client's. The semaphore's
-- holders and an RWMutex's readers are such sets. This text starts each of their scripts.

-- live drops set's expired holders and returns how many are left.
local function live(set, now)
	redis.call("ZREMRANGEBYSCORE", set, "-inf", now)
	return redis.call("ZCARD", set)
end

-- hold gives token a place in set until now + ms, and keeps set until its last holder expires.
local function hold(set, token, now, ms)
	redis.call("ZADD", set, now + ms, token)
	local last = redis.call("ZRANGE", set, -1, -1, "WITHSCORES")
	redis.call("PEXPIRE", set, math.ceil(tonumber(last[2]) - now))
end

-- extend gives token, while it is a live holder of set, ms more from now. Returns 1 if it did.
local function extend(set, token, ms)
	local now = now_ms()
	local expiry = redis.call("ZSCORE", set, token)
	if not expiry or tonumber(expiry) <= now then
		return 0
	end
	hold(set, token, now, tonumber(ms))
	return 1
end

-- release takes token out of set. When it was a live holder, it announces the release of name
-- on channel while a waiting call's mark (watch) lives (never when channel is ""), waking every
-- waiter for name, and returns 1.
local function release(set, watch, token, channel, name)
	local expiry = redis.call("ZSCORE", set, token)
	if not expiry then
		return 0
	end
	redis.call("ZREM", set, token)
	if tonumber(expiry) <= now_ms() then
		return 0
	end
	if channel ~= "" and redis.call("EXISTS", watch) == 1 then
		redis.call("PUBLISH", channel, name .. "\n")
	end
	return 1
end


-- refuse returns a refusal, after a waiting call marks watch for ms ("0" for a call that does
-- not wait).
local function refuse(watch, ms)
	if (tonumber(ms) or 0) > 0 then
		redis.call("SET", watch, "1", "PX", ms)
	end
	return {0}
end
