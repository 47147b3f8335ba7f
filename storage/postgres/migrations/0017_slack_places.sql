-- A run's place in Slack moves out of the run's row into the bot's own
-- table, bot_places (slackstate.Place): the thread the run lives in
-- (team, channel, thread_ts), whether its status is a stream (until now the
-- key StatusStream of the run's detail) and its status message's ts. Every
-- run with a thread or a status message keeps them; the run's row loses
-- the columns (and the index on channel with them), and its detail the
-- key. The interrupt's message id in the detail is renamed MessageTS →
-- MessageID, and the upload's column message_ts → message_id
-- (research.PendingInterrupt.MessageID, research.Upload.MessageID).
-- Append-only once released.
CREATE TABLE bot_places (
    run_id    text    PRIMARY KEY,
    team      text    NOT NULL,
    channel   text    NOT NULL,
    thread_ts text    NOT NULL,
    stream    boolean NOT NULL,
    status_ts text    NOT NULL
);

INSERT INTO bot_places (run_id, team, channel, thread_ts, stream, status_ts)
SELECT id, team, channel, thread_ts,
       COALESCE(detail::jsonb -> 'StatusStream' = 'true'::jsonb, false),
       status_ts
FROM bot_runs
WHERE team <> '' OR channel <> '' OR thread_ts <> '' OR status_ts <> '';

UPDATE bot_runs SET detail = (detail::jsonb - 'StatusStream')::text
WHERE detail::jsonb ? 'StatusStream';

UPDATE bot_runs SET detail = jsonb_set(detail::jsonb #- '{Interrupt,MessageTS}',
    '{Interrupt,MessageID}', detail::jsonb #> '{Interrupt,MessageTS}')::text
WHERE detail::jsonb #> '{Interrupt,MessageTS}' IS NOT NULL;

ALTER TABLE bot_runs
    DROP COLUMN team,
    DROP COLUMN channel,
    DROP COLUMN thread_ts,
    DROP COLUMN status_ts;

ALTER TABLE bot_uploads RENAME COLUMN message_ts TO message_id;
