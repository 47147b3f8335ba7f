-- Scheduled research digests (package schedule). Append-only once released.
-- Copy of storage/sqlite/migrations/0003_schedules.sql (schedule/sqlitestore's
-- tests check that the two stay identical).
--
-- Times are Unix nanoseconds. A firing is keyed by (schedule_id, due):
-- claiming it is an INSERT … ON CONFLICT DO NOTHING, so each due time runs
-- once however many processes share the file.

CREATE TABLE schedules (
    id           TEXT    PRIMARY KEY,
    active_since INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    enabled      INTEGER NOT NULL,
    team         TEXT    NOT NULL,
    channel      TEXT    NOT NULL,
    owner        TEXT    NOT NULL,
    topic        TEXT    NOT NULL,
    spec         TEXT    NOT NULL,
    tz           TEXT    NOT NULL,
    options      TEXT    NOT NULL -- JSON
) STRICT;

CREATE INDEX schedules_channel ON schedules (channel);

CREATE TABLE schedule_firings (
    schedule_id TEXT    NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due         INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    claimed_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    manual      INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    error       TEXT    NOT NULL,
    digest      TEXT, -- JSON; NULL until done
    PRIMARY KEY (schedule_id, due)
) STRICT;

CREATE INDEX schedule_firings_running ON schedule_firings (lease_until) WHERE state = 'running';
