-- The inbox, the processed event keys and the instance registry move onto
-- the jobs queue (migration 0007): an inbox entry becomes a job of kind
-- 'envelope' whose payload is its type, a NUL, its envelope id, a NUL and
-- its body (storage/jobmap builds the same bytes); an event key a done job
-- of kind 'event'; an instance a row of instances. Entries not done keep
-- their holder, lease and attempts, so a takeover picks them up as before.
-- Then the old tables go. Append-only once released.
INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
SELECT 'envelope', key,
       CASE WHEN done_at <> 0 THEN 'done' ELSE 'held' END,
       unhex(hex(type) || '00' || hex(envelope_id) || '00' || CASE WHEN done_at <> 0 THEN '' ELSE hex(payload) END),
       CASE WHEN done_at <> 0 THEN '' ELSE owner END,
       CASE WHEN done_at <> 0 THEN 0 ELSE lease_until END,
       attempts, received_at, max(received_at, done_at), done_at, ''
FROM bot_inbox WHERE true
ON CONFLICT DO NOTHING;

INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
SELECT 'event', key, 'done', x'', '', 0, 0, claimed_at, claimed_at, claimed_at, ''
FROM bot_events WHERE true
ON CONFLICT DO NOTHING;

INSERT INTO instances (id, seen_at)
SELECT id, seen_at FROM bot_instances WHERE true
ON CONFLICT (id) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at);

DROP TABLE bot_inbox;
DROP TABLE bot_events;
DROP TABLE bot_instances;
