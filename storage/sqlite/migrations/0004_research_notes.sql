-- Research notes (seed 001): one row per search query's summary, for audit
-- and reuse. Append-only once released. Times are Unix nanoseconds; sources
-- is a JSON array of URLs.
CREATE TABLE research_notes (
    id         TEXT    PRIMARY KEY,
    thread_id  TEXT    NOT NULL,
    turn       INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    subtask    TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    summary    TEXT    NOT NULL,
    sources    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX research_notes_thread ON research_notes (thread_id, turn, step);
