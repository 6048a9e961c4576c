-- Compare-and-delete: remove KEYS[1] only while it holds this acquisition's token ARGV[1].
-- Unless ARGV[2] is empty, announce the release: the key, a newline, and the waiter first in the
-- key's queue KEYS[2], taken off the queue; only that waiter wakes, so that the contenders do not
-- all try at once. A waiter's name is its Client's id, a dot and a number, and the announcement
-- goes to that Client's channel, ARGV[2] .. ":" .. id. When the queue is empty it goes to
-- ARGV[2], which every Client hears, with nothing after the newline.
-- ARGV[3], when not empty, is the waiter that had acquired the lock: it leaves the queue first,
-- whether or not the key is still ours on this node.
-- KEYS[2] and ARGV[3] are needed only to announce.
-- Returns 1 when the key was ours and is gone, 0 when it was absent or someone else's.
if ARGV[2] ~= "" and ARGV[3] ~= "" then
	redis.call("ZREM", KEYS[2], ARGV[3])
end
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	if ARGV[2] ~= "" then
		local next = redis.call("ZPOPMIN", KEYS[2])[1]
		if next then
			redis.call("PUBLISH", ARGV[2] .. ":" .. string.match(next, "^[^.]*"), KEYS[1] .. "\n" .. next)
		else
			redis.call("PUBLISH", ARGV[2], KEYS[1] .. "\n")
		end
	end
	return 1
end
return 0
