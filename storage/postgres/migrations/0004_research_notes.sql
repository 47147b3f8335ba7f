-- Research notes (seed 001): one row per search query's summary, for audit
-- and reuse. Append-only once released. Times are Unix nanoseconds; sources
-- is a JSON array of URLs.
CREATE TABLE research_notes (
    id         text    PRIMARY KEY,
    thread_id  text    NOT NULL,
    turn       integer NOT NULL,
    step       integer NOT NULL,
    subtask    text    NOT NULL,
    query      text    NOT NULL,
    summary    text    NOT NULL,
    sources    text    NOT NULL,
    created_at bigint  NOT NULL
);

CREATE INDEX research_notes_thread ON research_notes (thread_id, turn, step);
