-- A run's place in Slack moves out of the run's row into the bot's own
-- table, bot_places (slackstate.Place): the thread the run lives in
-- (team, channel, thread_ts), whether its status is a stream (until now the
-- key StatusStream of the run's detail) and its status message's ts. Every
-- run with a thread or a status message keeps them; the run's row loses
-- the columns, and its detail the key. The interrupt's message id in the
-- detail is renamed MessageTS → MessageID, and the upload's column
-- message_ts → message_id (research.PendingInterrupt.MessageID,
-- research.Upload.MessageID). Append-only once released.
CREATE TABLE bot_places (
    run_id    TEXT    PRIMARY KEY,
    team      TEXT    NOT NULL,
    channel   TEXT    NOT NULL,
    thread_ts TEXT    NOT NULL,
    stream    INTEGER NOT NULL,
    status_ts TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO bot_places (run_id, team, channel, thread_ts, stream, status_ts)
SELECT id, team, channel, thread_ts,
       CASE WHEN json_extract(detail, '$.StatusStream') THEN 1 ELSE 0 END,
       status_ts
FROM bot_runs
WHERE team <> '' OR channel <> '' OR thread_ts <> '' OR status_ts <> '';

UPDATE bot_runs SET detail = json_remove(detail, '$.StatusStream')
WHERE json_type(detail, '$.StatusStream') IS NOT NULL;

UPDATE bot_runs SET detail = json_set(json_remove(detail, '$.Interrupt.MessageTS'),
    '$.Interrupt.MessageID', json_extract(detail, '$.Interrupt.MessageTS'))
WHERE json_type(detail, '$.Interrupt.MessageTS') IS NOT NULL;

DROP INDEX bot_runs_channel;
ALTER TABLE bot_runs DROP COLUMN team;
ALTER TABLE bot_runs DROP COLUMN channel;
ALTER TABLE bot_runs DROP COLUMN thread_ts;
ALTER TABLE bot_runs DROP COLUMN status_ts;

ALTER TABLE bot_uploads RENAME COLUMN message_ts TO message_id;
