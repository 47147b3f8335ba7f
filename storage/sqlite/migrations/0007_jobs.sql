-- The durable lease queue (jobs.Queue): one row per job of a kind (run,
-- envelope, firing), unique by (kind, key). A job is ready, held by owner
-- until lease_until, parked waiting for a person, done or failed. Claims
-- take ready jobs and held jobs whose lease expired, oldest first
-- (created_at, key); attempts counts pickups.
--
-- Times are Unix nanoseconds, passed in by the caller; 0 means "no time".
CREATE TABLE jobs (
    kind        TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('ready', 'held', 'parked', 'done', 'failed')),
    payload     BLOB    NOT NULL,
    owner       TEXT    NOT NULL,
    lease_until INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    error       TEXT    NOT NULL,
    PRIMARY KEY (kind, key)
) STRICT;

-- Claimable candidates of a kind, oldest first (Claim, FailExpired).
CREATE INDEX jobs_live ON jobs (kind, created_at, key) WHERE state IN ('ready', 'held');
-- Finished jobs by age (Prune).
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'failed');

-- The instance registry (TouchInstance, LiveInstances, LeaveInstance): each
-- process's id and when it last announced itself.
CREATE TABLE instances (
    id      TEXT    PRIMARY KEY,
    seen_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX instances_seen_at ON instances (seen_at);
