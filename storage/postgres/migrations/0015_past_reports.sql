-- Finished reports, kept as a source for later questions (issue 26 item 3).
-- Where a report was posted (team, channel, thread_ts, private, requester)
-- decides who may later read it; url is what a later report cites (the
-- thread's Slack permalink, or deepresearch://report/RUN_ID).
-- created_at is Unix nanoseconds. terms is research.ReportTerms of the
-- title, the question and the text (words, and Chinese/Japanese character
-- pairs), separated by spaces: the 'simple' configuration splits it as
-- SQLite's FTS5 does, without an extension.
CREATE TABLE past_reports (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id     text NOT NULL UNIQUE,
    team       text NOT NULL,
    channel    text NOT NULL,
    thread_ts  text NOT NULL,
    private    boolean NOT NULL,
    requester  text NOT NULL,
    url        text NOT NULL,
    title      text NOT NULL,
    question   text NOT NULL,
    body       text NOT NULL,
    terms      text NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX past_reports_created ON past_reports (created_at);
CREATE INDEX past_reports_terms ON past_reports USING gin (to_tsvector('simple', terms));
