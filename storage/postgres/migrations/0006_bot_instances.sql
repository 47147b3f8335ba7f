-- The bot's instance registry (bot.Store TouchInstance, LiveInstances,
-- LeaveInstance): every running bot process writes its instance id and the
-- time it last announced itself here every few seconds, and deletes its row
-- when it stops cleanly. The processes on one database count the rows seen
-- recently to split the Slack workspace's rate limits among themselves.
-- Rows of processes that died are forgotten with the event ids
-- (PruneEvents).
--
-- Times are Unix nanoseconds (bigint).
CREATE TABLE bot_instances (
    seen_at bigint NOT NULL,
    id      text   PRIMARY KEY
);

-- Live instances (LiveInstances) and old rows (PruneEvents) by age.
CREATE INDEX bot_instances_seen_at ON bot_instances (seen_at);
