-- Finished reports, kept as a source for later questions (issue 26 item 3).
-- Where a report was posted (team, channel, thread_ts, private, requester)
-- decides who may later read it; url is what a later report cites (the
-- thread's Slack permalink, or deepresearch://report/RUN_ID).
-- created_at is Unix nanoseconds.
CREATE TABLE past_reports (
    id         INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL UNIQUE,
    team       TEXT NOT NULL,
    channel    TEXT NOT NULL,
    thread_ts  TEXT NOT NULL,
    private    INTEGER NOT NULL,
    requester  TEXT NOT NULL,
    url        TEXT NOT NULL,
    title      TEXT NOT NULL,
    question   TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX past_reports_created ON past_reports (created_at);
-- The full-text index: terms is research.ReportTerms of the title, the
-- question and the text (words, and Chinese/Japanese character pairs),
-- separated by spaces; its rowid is past_reports.id.
CREATE VIRTUAL TABLE past_report_terms USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');
