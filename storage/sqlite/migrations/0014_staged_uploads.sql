-- Report files a run reserved in Slack (files.getUploadURLExternal, bytes
-- uploaded) and has not yet shared and recorded: a process that dies in
-- between leaves them here for the next to delete or record.
CREATE TABLE bot_staged_files (
    run_id  TEXT    NOT NULL,
    file_id TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, file_id)
) STRICT, WITHOUT ROWID;
