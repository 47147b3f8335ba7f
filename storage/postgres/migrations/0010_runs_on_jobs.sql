-- Runs move onto the jobs queue (migration 0007): each run gets a job of
-- kind 'run' keyed by its id, which holds its lease, its state (queued:
-- ready, running: held, waiting: parked, done, failed; cancelled is failed
-- with the payload 'cancelled'), its finish time and its error text.
-- Running runs keep their holder, lease and attempts, so a takeover picks
-- them up as before. The row keeps the question, the options, the
-- interrupt and the decision; its lease and state columns go, with the
-- indexes on them (CreateRun's checks read the jobs under its advisory
-- locks). Append-only once released.
INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
SELECT 'run', id,
       CASE state WHEN 'queued' THEN 'ready' WHEN 'running' THEN 'held' WHEN 'waiting' THEN 'parked'
                  WHEN 'done' THEN 'done' ELSE 'failed' END,
       CASE state WHEN 'cancelled' THEN convert_to('cancelled', 'UTF8') ELSE ''::bytea END,
       CASE state WHEN 'running' THEN owner ELSE '' END,
       CASE state WHEN 'running' THEN lease_until ELSE 0 END,
       attempt, created_at, updated_at,
       CASE WHEN state IN ('queued', 'running', 'waiting') THEN 0 ELSE greatest(finished_at, created_at) END,
       CASE WHEN state IN ('failed', 'cancelled') THEN error ELSE '' END
FROM bot_runs
ON CONFLICT DO NOTHING;

DROP INDEX bot_runs_active_thread;
DROP INDEX bot_runs_active_requester;
DROP INDEX bot_runs_acquirable;
ALTER TABLE bot_runs
    DROP COLUMN state,
    DROP COLUMN owner,
    DROP COLUMN lease_until,
    DROP COLUMN attempt,
    DROP COLUMN error,
    DROP COLUMN finished_at;
