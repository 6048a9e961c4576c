\getenv fence REDLOCK_FENCE
BEGIN;
-- The guard's statement: no row comes back for a stale token, and \gset stops psql.
INSERT INTO fences AS t (resource, token) VALUES ('deploy', :fence)
  ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE t.token <= excluded.token
  RETURNING token AS accepted \gset
-- The writes it guards.
UPDATE releases SET version = :'version', fence = :fence WHERE app = 'shop';
COMMIT;
