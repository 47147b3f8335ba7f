-- Scheduled research digests (package schedule). Append-only once released.
-- Copy of storage/postgres/migrations/0003_schedules.sql (schedule/pgstore's
-- tests check that the two stay identical).
--
-- Times are Unix nanoseconds (bigint: exact, like 0001). A firing is keyed by
-- (schedule_id, due): claiming it is an INSERT … ON CONFLICT DO NOTHING, so
-- each due time runs once however many processes share the database.

CREATE TABLE schedules (
    id           text    PRIMARY KEY,
    active_since bigint  NOT NULL,
    created_at   bigint  NOT NULL,
    updated_at   bigint  NOT NULL,
    enabled      boolean NOT NULL,
    team         text    NOT NULL,
    channel      text    NOT NULL,
    owner        text    NOT NULL,
    topic        text    NOT NULL,
    spec         text    NOT NULL,
    tz           text    NOT NULL,
    options      jsonb   NOT NULL
);

CREATE INDEX schedules_channel ON schedules (channel);

CREATE TABLE schedule_firings (
    schedule_id text    NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due         bigint  NOT NULL,
    lease_until bigint  NOT NULL,
    claimed_at  bigint  NOT NULL,
    finished_at bigint  NOT NULL,
    attempts    integer NOT NULL,
    manual      boolean NOT NULL,
    state       text    NOT NULL,
    owner       text    NOT NULL,
    error       text    NOT NULL,
    digest      jsonb,
    PRIMARY KEY (schedule_id, due)
);

-- Expired leases are looked for at every scheduler tick.
CREATE INDEX schedule_firings_running ON schedule_firings (lease_until) WHERE state = 'running';
