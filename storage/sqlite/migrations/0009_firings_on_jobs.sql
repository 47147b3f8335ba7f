-- Digest firings move onto the jobs queue (migration 0007): each firing
-- gets a job of kind 'firing' keyed schedule_id || '@' || due, which holds
-- its lease and state (running: held, waiting: parked, done, failed; skipped
-- is done with the payload 'skipped'). Running firings keep their holder,
-- lease and attempts, so a takeover picks them up as before. The row keeps
-- manual, claimed_at, the outcome's error text and the digest; its lease
-- and state columns go. Append-only once released.
INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
SELECT 'firing', schedule_id || '@' || due,
       CASE state WHEN 'running' THEN 'held' WHEN 'waiting' THEN 'parked' WHEN 'failed' THEN 'failed' ELSE 'done' END,
       CASE state WHEN 'skipped' THEN CAST('skipped' AS BLOB) ELSE x'' END,
       CASE state WHEN 'running' THEN owner ELSE '' END,
       CASE state WHEN 'running' THEN lease_until ELSE 0 END,
       attempts, claimed_at, max(claimed_at, finished_at),
       CASE WHEN state IN ('running', 'waiting') THEN 0 ELSE max(finished_at, claimed_at) END,
       ''
FROM schedule_firings WHERE true
ON CONFLICT DO NOTHING;

DROP INDEX schedule_firings_running;
ALTER TABLE schedule_firings DROP COLUMN lease_until;
ALTER TABLE schedule_firings DROP COLUMN finished_at;
ALTER TABLE schedule_firings DROP COLUMN attempts;
ALTER TABLE schedule_firings DROP COLUMN state;
ALTER TABLE schedule_firings DROP COLUMN owner;
