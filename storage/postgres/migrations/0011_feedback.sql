-- Feedback on reports: one row per run and user, the latest click winning.
-- value is "positive" or "negative"; text is what was wrong, when the person
-- said; at is Unix nanoseconds.
CREATE TABLE run_feedback (
    run_id  text NOT NULL,
    user_id text NOT NULL,
    value   text NOT NULL,
    text    text NOT NULL,
    at      bigint NOT NULL,
    PRIMARY KEY (run_id, user_id)
);
