-- Release a holder (after holders.lua). KEYS: the holders, the watch mark. ARGV: the token, the
-- channel to announce the release on ("" for none), the name in the announcement.
-- Returns 1 when the token was a live holder, 0 otherwise.
return release(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
