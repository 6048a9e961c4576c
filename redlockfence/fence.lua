-- The fencing check, the start of every script of the Redis guard. KEYS[1] keeps the resource's
-- highest accepted token, ARGV[1] is the writer's token, both in decimal, and ARGV[2] is the
-- call's nonce. A token lower than the highest is refused with an error reply
-- "REDLOCKFENCE nonce STALE highest"; without a record, a key of the caller's that exists is
-- refused with "REDLOCKFENCE nonce LOST key"; after a refusal nothing else runs. Otherwise the
-- token is recorded, and the rest of the script runs with KEYS and ARGV without the guard's
-- elements: the caller's own.
--
-- The Go side joins this file into one line, so that a script after it keeps its line numbers:
-- comments only on lines of their own, and no statement that depends on a line break.
local KEYS, ARGV, refused = (function(keys, argv)
	-- The caller's script does not see the nonce, not even in the global ARGV, so that an
	-- error reply of its own cannot pass for the guard's refusal.
	local refusal = 'REDLOCKFENCE ' .. argv[2] .. ' '
	argv[2] = ''
	local highest = redis.call('GET', keys[1])
	if highest then
		if #highest > 20 or not string.match(highest, '^%d+$') then
			return nil, nil, redis.error_reply('REDLOCKFENCE_NOTOKEN ' .. keys[1] .. ' does not hold a fencing token')
		end
		-- Decimal strings of equal length compare as their numbers: no float rounding.
		local width = math.max(#highest, #argv[1])
		if string.rep('0', width - #highest) .. highest > string.rep('0', width - #argv[1]) .. argv[1] then
			return nil, nil, redis.error_reply(refusal .. 'STALE ' .. highest)
		end
	else
		-- No record, but data: it may be a later holder's, whose token is lost with the record.
		for i = 2, #keys do
			if redis.call('EXISTS', keys[i]) == 1 then
				return nil, nil, redis.error_reply(refusal .. 'LOST ' .. keys[i])
			end
		end
	end
	redis.call('SET', keys[1], argv[1])
	local k, a = {}, {}
	for i = 2, #keys do k[i - 1] = keys[i] end
	for i = 3, #argv do a[i - 2] = argv[i] end
	return k, a, nil
end)(KEYS, ARGV)
if refused then return refused end
