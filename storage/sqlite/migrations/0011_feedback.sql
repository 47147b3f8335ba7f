-- Feedback on reports: one row per run and user, the latest click winning.
-- value is "positive" or "negative"; text is what was wrong, when the person
-- said; at is Unix nanoseconds.
CREATE TABLE run_feedback (
    run_id  TEXT NOT NULL,
    user_id TEXT NOT NULL,
    value   TEXT NOT NULL,
    text    TEXT NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, user_id)
) STRICT;
