-- A digest firing that runs is a research run of the digest kind (run id
-- 'digest:' || schedule_id || '@' || due): its lease and state are the
-- run's, and the firing's row shows them. A firing that never ran
-- (skipped, or failed before its run) keeps its final state in the new
-- column state ('' for a firing with a run). The firing jobs (0009) go:
-- final ones leave their state in the row; one still running or waiting
-- for approval when this migration runs is failed (it has no run to
-- continue it). Append-only once released.
ALTER TABLE schedule_firings ADD COLUMN state text NOT NULL DEFAULT '';

UPDATE schedule_firings SET state = COALESCE((
    SELECT CASE
        WHEN j.state = 'done' AND length(j.payload) > 0 THEN 'skipped'
        WHEN j.state = 'done' THEN 'done'
        ELSE 'failed' END
    FROM jobs j WHERE j.kind = 'firing' AND j.key = schedule_firings.schedule_id || '@' || CAST(schedule_firings.due AS text)), 'failed'),
  error = CASE WHEN error = '' THEN COALESCE((
    SELECT CASE
        WHEN j.state IN ('held', 'ready') THEN 'abandoned: the process running it stopped'
        WHEN j.state = 'parked' THEN 'abandoned: never approved'
        ELSE j.error END
    FROM jobs j WHERE j.kind = 'firing' AND j.key = schedule_firings.schedule_id || '@' || CAST(schedule_firings.due AS text)), '') ELSE error END;

DELETE FROM jobs WHERE kind = 'firing';
