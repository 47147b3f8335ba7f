-- Durable records of the Slack bot (bot.Store): processed event ids, the
-- Slack thread ↔ graph thread mapping, runs as leased jobs, and uploads.
-- Append-only: never edit a released migration; add a new file instead.
--
-- Times are Unix nanoseconds; 0 means "no time" (the zero time.Time).

-- Event (or envelope) keys being handled: claimed once, pruned by age.
CREATE TABLE bot_events (
    key        TEXT    PRIMARY KEY,
    claimed_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX bot_events_claimed_at ON bot_events (claimed_at);

-- Slack thread → graph thread. Insert-if-absent.
CREATE TABLE bot_threads (
    team       TEXT    NOT NULL,
    channel    TEXT    NOT NULL,
    thread_ts  TEXT    NOT NULL,
    thread_id  TEXT    NOT NULL,
    requester  TEXT    NOT NULL,
    dm         INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (team, channel, thread_ts)
) STRICT, WITHOUT ROWID;

-- Runs. seq is the creation order (LatestRun, ListRuns newest first,
-- AcquireRuns oldest first). The interrupt is present when intr_id is not
-- NULL, the decision when dec_interrupt_id is not NULL. options is the JSON
-- of bot.RunOptions.
CREATE TABLE bot_runs (
    seq                 INTEGER PRIMARY KEY,
    id                  TEXT    NOT NULL UNIQUE,
    thread_id           TEXT    NOT NULL,
    team                TEXT    NOT NULL,
    channel             TEXT    NOT NULL,
    thread_ts           TEXT    NOT NULL,
    requester           TEXT    NOT NULL,
    question            TEXT    NOT NULL,
    follow_up           INTEGER NOT NULL,
    options             TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    owner               TEXT    NOT NULL,
    lease_until         INTEGER NOT NULL,
    attempt             INTEGER NOT NULL,
    status_ts           TEXT    NOT NULL,
    intr_id             TEXT,
    intr_kind           TEXT    NOT NULL,
    intr_text           TEXT    NOT NULL,
    intr_message_ts     TEXT    NOT NULL,
    dec_interrupt_id    TEXT,
    dec_action          TEXT    NOT NULL,
    dec_text            TEXT    NOT NULL,
    dec_by              TEXT    NOT NULL,
    dec_at              INTEGER NOT NULL,
    cancel_requested_by TEXT    NOT NULL,
    error               TEXT    NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    finished_at         INTEGER NOT NULL
) STRICT;

-- At most one active run per graph thread: the database enforces what
-- CreateRun checks.
CREATE UNIQUE INDEX bot_runs_active_thread ON bot_runs (thread_id)
    WHERE state IN ('queued', 'running', 'waiting');
-- Active runs per user (CreateRun's limit).
CREATE INDEX bot_runs_active_requester ON bot_runs (requester)
    WHERE state IN ('queued', 'running', 'waiting');
-- Acquirable runs, oldest first (AcquireRuns).
CREATE INDEX bot_runs_acquirable ON bot_runs (seq, lease_until)
    WHERE state IN ('queued', 'running');
CREATE INDEX bot_runs_thread ON bot_runs (thread_id, seq);
CREATE INDEX bot_runs_requester ON bot_runs (requester, seq);
CREATE INDEX bot_runs_channel ON bot_runs (channel, seq);

-- The posted report of a run. Insert-if-absent.
CREATE TABLE bot_uploads (
    run_id     TEXT    PRIMARY KEY,
    file_id    TEXT    NOT NULL,
    message_ts TEXT    NOT NULL,
    at         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
