-- The fields of a run that no condition, CAS or index reads move into one
-- JSON text, detail, which the stores write and read through one codec
-- (jobmap.RunDetail): the question, follow_up, the options, the
-- interrupt's kind, text and message, and the decision's action, text, by
-- and time (RFC 3339 in UTC, as encoding/json writes a time). The columns
-- that conditions, CAS and indexes read stay: the ids, the thread, the
-- requester, status_ts, intr_id and dec_interrupt_id (whose NULL says there
-- is no interrupt or decision), cancel_requested_by and the times. A new
-- field of a run is a key of detail and needs no migration.
--
-- detail is text, not jsonb: nothing in SQL reads inside it (a field that
-- a query needs becomes a column), so jsonb would parse it on every write
-- and render it on every read for nothing, and the stores keep the bytes
-- the codec wrote, as SQLite does. Append-only once released.
ALTER TABLE bot_runs ADD COLUMN detail text NOT NULL DEFAULT '{}';

UPDATE bot_runs SET detail = json_build_object(
    'Question', question,
    'FollowUp', follow_up,
    'Options', options::json,
    'Interrupt', CASE WHEN intr_id IS NULL THEN NULL
        ELSE json_build_object('Kind', intr_kind, 'Text', intr_text, 'MessageTS', intr_message_ts) END,
    'Decision', CASE WHEN dec_interrupt_id IS NULL THEN NULL
        ELSE json_build_object('Action', dec_action, 'Text', dec_text, 'By', dec_by,
            'At', CASE WHEN dec_at = 0 THEN '0001-01-01T00:00:00Z'
                ELSE to_char(to_timestamp(dec_at / 1000000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                    || '.' || lpad((dec_at % 1000000000)::text, 9, '0') || 'Z' END) END)::text;

ALTER TABLE bot_runs
    DROP COLUMN question,
    DROP COLUMN follow_up,
    DROP COLUMN options,
    DROP COLUMN intr_kind,
    DROP COLUMN intr_text,
    DROP COLUMN intr_message_ts,
    DROP COLUMN dec_action,
    DROP COLUMN dec_text,
    DROP COLUMN dec_by,
    DROP COLUMN dec_at;
