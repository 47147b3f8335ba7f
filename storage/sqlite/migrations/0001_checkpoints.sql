-- Checkpoints of the graph runtime (graph.Saver). Append-only: never edit a
-- released migration; add 0002_….sql instead.
--
-- Times are Unix nanoseconds. Absent blobs are stored as x'' (never NULL):
-- the store treats an empty blob and a missing one alike.

-- One row per checkpoint chain (thread, namespace). head is the target of the
-- compare-and-set in Commit; updated_at and finished drive PruneThreads.
CREATE TABLE graph_chains (
    chain_id   INTEGER PRIMARY KEY,
    thread_id  TEXT    NOT NULL,
    ns         TEXT    NOT NULL,
    head       INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished   INTEGER NOT NULL,
    UNIQUE (thread_id, ns)
) STRICT;

CREATE TABLE graph_checkpoints (
    chain_id   INTEGER NOT NULL,
    id         INTEGER NOT NULL,
    parent_id  INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    source     TEXT    NOT NULL,
    snapshot   BLOB    NOT NULL,
    delta      BLOB    NOT NULL,
    next       BLOB    NOT NULL,
    meta       BLOB    NOT NULL,
    PRIMARY KEY (chain_id, id)
) STRICT;

-- Pending writes: the results of the tasks run from a checkpoint.
CREATE TABLE graph_writes (
    chain_id      INTEGER NOT NULL,
    checkpoint_id INTEGER NOT NULL,
    task          INTEGER NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT    NOT NULL,
    value         BLOB    NOT NULL,
    PRIMARY KEY (chain_id, checkpoint_id, task, idx)
) STRICT;

-- Tombstones: a deleted thread stays deleted.
CREATE TABLE graph_deleted_threads (
    thread_id  TEXT    PRIMARY KEY,
    deleted_at INTEGER NOT NULL
) STRICT;
