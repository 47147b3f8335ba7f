-- The active runs (queued, running, waiting: jobs of kind 'run' ready, held
-- or parked), for CreateRun's busy-thread and per-user checks: they start
-- from these few jobs and join each to its run, instead of reading every
-- run the thread or the requester ever had. Append-only once released.
CREATE INDEX jobs_active_runs ON jobs (key) WHERE kind = 'run' AND state IN ('ready', 'held', 'parked');
