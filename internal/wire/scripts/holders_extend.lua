-- Extend a holder (after holders.lua). KEYS: the holders. ARGV: the token, the ttl in ms.
-- Returns 1 when extended, 0 when the token is not a live holder.
return extend(KEYS[1], ARGV[1], ARGV[2])
