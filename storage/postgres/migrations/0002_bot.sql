-- Durable records of the Slack bot (bot.Store): processed event ids, the
-- Slack thread ↔ graph thread mapping, runs as leased jobs, and uploads.
-- Append-only: never edit a released migration; add a new file instead.
--
-- Times are Unix nanoseconds (bigint); 0 means "no time" (the zero
-- time.Time). Fixed-width columns come first to avoid alignment padding.

-- Event (or envelope) keys being handled: claimed once, pruned by age.
CREATE TABLE bot_events (
    claimed_at bigint NOT NULL,
    key        text   PRIMARY KEY
);

CREATE INDEX bot_events_claimed_at ON bot_events (claimed_at);

-- Slack thread → graph thread. Insert-if-absent.
CREATE TABLE bot_threads (
    created_at bigint  NOT NULL,
    dm         boolean NOT NULL,
    team       text    NOT NULL,
    channel    text    NOT NULL,
    thread_ts  text    NOT NULL,
    thread_id  text    NOT NULL,
    requester  text    NOT NULL,
    PRIMARY KEY (team, channel, thread_ts)
);

-- Runs. seq is the creation order (LatestRun, ListRuns newest first,
-- AcquireRuns oldest first). The interrupt is present when intr_id is not
-- NULL, the decision when dec_interrupt_id is not NULL. options is the JSON
-- of bot.RunOptions.
CREATE TABLE bot_runs (
    seq                 bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease_until         bigint  NOT NULL,
    dec_at              bigint  NOT NULL,
    created_at          bigint  NOT NULL,
    updated_at          bigint  NOT NULL,
    finished_at         bigint  NOT NULL,
    attempt             integer NOT NULL,
    follow_up           boolean NOT NULL,
    id                  text    NOT NULL UNIQUE,
    thread_id           text    NOT NULL,
    team                text    NOT NULL,
    channel             text    NOT NULL,
    thread_ts           text    NOT NULL,
    requester           text    NOT NULL,
    question            text    NOT NULL,
    options             text    NOT NULL,
    state               text    NOT NULL,
    owner               text    NOT NULL,
    status_ts           text    NOT NULL,
    intr_id             text,
    intr_kind           text    NOT NULL,
    intr_text           text    NOT NULL,
    intr_message_ts     text    NOT NULL,
    dec_interrupt_id    text,
    dec_action          text    NOT NULL,
    dec_text            text    NOT NULL,
    dec_by              text    NOT NULL,
    cancel_requested_by text    NOT NULL,
    error               text    NOT NULL
);

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
    at         bigint NOT NULL,
    run_id     text   PRIMARY KEY,
    file_id    text   NOT NULL,
    message_ts text   NOT NULL
);
