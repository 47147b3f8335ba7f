-- The fields of a run that no condition, CAS or index reads move into one
-- JSON text, detail, which the stores write and read through one codec
-- (jobmap.RunDetail): the question, follow_up, the options, the
-- interrupt's kind, text and message, and the decision's action, text, by
-- and time (RFC 3339 in UTC, as encoding/json writes a time). The columns
-- that conditions, CAS and indexes read stay: the ids, the thread, the
-- requester, status_ts, intr_id and dec_interrupt_id (whose NULL says there
-- is no interrupt or decision), cancel_requested_by and the times. A new
-- field of a run is a key of detail and needs no migration. Append-only
-- once released.
ALTER TABLE bot_runs ADD COLUMN detail TEXT NOT NULL DEFAULT '{}';

UPDATE bot_runs SET detail = json_object(
    'Question', question,
    'FollowUp', json(CASE WHEN follow_up THEN 'true' ELSE 'false' END),
    'Options', json(options),
    'Interrupt', CASE WHEN intr_id IS NULL THEN NULL
        ELSE json_object('Kind', intr_kind, 'Text', intr_text, 'MessageTS', intr_message_ts) END,
    'Decision', CASE WHEN dec_interrupt_id IS NULL THEN NULL
        ELSE json_object('Action', dec_action, 'Text', dec_text, 'By', dec_by,
            'At', CASE WHEN dec_at = 0 THEN '0001-01-01T00:00:00Z'
                ELSE strftime('%Y-%m-%dT%H:%M:%S', dec_at / 1000000000, 'unixepoch')
                    || printf('.%09dZ', dec_at % 1000000000) END) END);

ALTER TABLE bot_runs DROP COLUMN question;
ALTER TABLE bot_runs DROP COLUMN follow_up;
ALTER TABLE bot_runs DROP COLUMN options;
ALTER TABLE bot_runs DROP COLUMN intr_kind;
ALTER TABLE bot_runs DROP COLUMN intr_text;
ALTER TABLE bot_runs DROP COLUMN intr_message_ts;
ALTER TABLE bot_runs DROP COLUMN dec_action;
ALTER TABLE bot_runs DROP COLUMN dec_text;
ALTER TABLE bot_runs DROP COLUMN dec_by;
ALTER TABLE bot_runs DROP COLUMN dec_at;
