-- The bot's inbox (bot.Store PutInbox … FinishInbox): every received Socket
-- Mode envelope, stored before it is acked and kept until it has been
-- handled, so that an acked envelope survives the death of the process that
-- acked it. The key is the dedupe key (ev:<event_id> or env:<envelope_id>):
-- the insert (ON CONFLICT DO NOTHING) is also the redelivery check. An entry
-- is held by one process at a time (owner, lease_until), as runs are; done
-- entries keep their key, without the payload, until pruned with the event
-- ids. Append-only once released.
--
-- Times are Unix nanoseconds; 0 means "no time" (done_at 0: not done yet).
CREATE TABLE bot_inbox (
    key         TEXT    PRIMARY KEY,
    type        TEXT    NOT NULL,
    envelope_id TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    received_at INTEGER NOT NULL,
    owner       TEXT    NOT NULL,
    lease_until INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    done_at     INTEGER NOT NULL
) STRICT;

-- Entries to handle, oldest first (ClaimInbox).
CREATE INDEX bot_inbox_pending ON bot_inbox (received_at) WHERE done_at = 0;
-- Handled entries by age (PruneEvents).
CREATE INDEX bot_inbox_done ON bot_inbox (received_at) WHERE done_at <> 0;
