-- The durable lease queue (jobs.Queue): one row per job of a kind (run,
-- envelope, firing), unique by (kind, key). A job is ready, held by owner
-- until lease_until, parked waiting for a person, done or failed. Claims
-- take ready jobs and held jobs whose lease expired, oldest first
-- (created_at, key), locking them FOR UPDATE SKIP LOCKED; attempts counts
-- pickups.
--
-- Times are Unix nanoseconds (bigint), passed in by the caller; 0 means "no
-- time". Fixed-width columns come first to avoid alignment padding.
CREATE TABLE jobs (
    lease_until bigint  NOT NULL,
    created_at  bigint  NOT NULL,
    updated_at  bigint  NOT NULL,
    finished_at bigint  NOT NULL,
    attempts    integer NOT NULL,
    kind        text    NOT NULL,
    key         text    NOT NULL,
    state       text    NOT NULL CHECK (state IN ('ready', 'held', 'parked', 'done', 'failed')),
    owner       text    NOT NULL,
    error       text    NOT NULL,
    payload     bytea   NOT NULL,
    PRIMARY KEY (kind, key)
);

-- Claimable candidates of a kind, oldest first (Claim, FailExpired).
CREATE INDEX jobs_live ON jobs (kind, created_at, key) WHERE state IN ('ready', 'held');
-- Finished jobs by age (Prune).
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'failed');

-- The instance registry (TouchInstance, LiveInstances, LeaveInstance): each
-- process's id and when it last announced itself.
CREATE TABLE instances (
    seen_at bigint NOT NULL,
    id      text   PRIMARY KEY
);

CREATE INDEX instances_seen_at ON instances (seen_at);
