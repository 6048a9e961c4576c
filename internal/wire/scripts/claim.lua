-- Claim lock keys for a lock that a quorum of nodes holds: set each key to the token for the
-- ttl, whatever it held. KEYS: the keys. ARGV: the token, the ttl in ms. Only the holder of a
-- quorum sends it, and only to nodes that lack its token: any other token there is that of an
-- attempt that cannot win while the quorum holds (a refused contender's, whose roll-back is on
-- its way). Returns {1}, a grant.
for i = 1, #KEYS do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
return {1}
