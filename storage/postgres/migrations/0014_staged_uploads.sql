-- Report files a run reserved in Slack (files.getUploadURLExternal, bytes
-- uploaded) and has not yet shared and recorded: a process that dies in
-- between leaves them here for the next to delete or record.
CREATE TABLE bot_staged_files (
    at      bigint NOT NULL,
    run_id  text   NOT NULL,
    file_id text   NOT NULL,
    PRIMARY KEY (run_id, file_id)
);
