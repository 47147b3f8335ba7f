-- Runs move onto the jobs queue (migration 0007): each run gets a job of
-- kind 'run' keyed by its id, which holds its lease, its state (queued:
-- ready, running: held, waiting: parked, done, failed; cancelled is failed
-- with the payload 'cancelled'), its finish time and its error text.
-- Running runs keep their holder, lease and attempts, so a takeover picks
-- them up as before. The row keeps the question, the options, the
-- interrupt and the decision; its lease and state columns go, with the
-- indexes on them (CreateRun's checks read the jobs, in CreateRun's
-- transaction). Append-only once released.
INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
SELECT 'run', id,
       CASE state WHEN 'queued' THEN 'ready' WHEN 'running' THEN 'held' WHEN 'waiting' THEN 'parked'
                  WHEN 'done' THEN 'done' ELSE 'failed' END,
       CASE state WHEN 'cancelled' THEN CAST('cancelled' AS BLOB) ELSE x'' END,
       CASE state WHEN 'running' THEN owner ELSE '' END,
       CASE state WHEN 'running' THEN lease_until ELSE 0 END,
       attempt, created_at, updated_at,
       CASE WHEN state IN ('queued', 'running', 'waiting') THEN 0 ELSE max(finished_at, created_at) END,
       CASE WHEN state IN ('failed', 'cancelled') THEN error ELSE '' END
FROM bot_runs WHERE true
ON CONFLICT DO NOTHING;

DROP INDEX bot_runs_active_thread;
DROP INDEX bot_runs_active_requester;
DROP INDEX bot_runs_acquirable;
ALTER TABLE bot_runs DROP COLUMN state;
ALTER TABLE bot_runs DROP COLUMN owner;
ALTER TABLE bot_runs DROP COLUMN lease_until;
ALTER TABLE bot_runs DROP COLUMN attempt;
ALTER TABLE bot_runs DROP COLUMN error;
ALTER TABLE bot_runs DROP COLUMN finished_at;
