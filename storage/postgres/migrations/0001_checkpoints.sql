-- Checkpoints of the graph runtime (graph.Saver). Append-only: never edit a
-- released migration; add 0002_….sql instead.
--
-- Compact on purpose: rows are keyed by a bigint chain id rather than the
-- thread id text, the primary keys are the only indexes, times are Unix
-- nanoseconds (bigint: exact, 8 bytes), and absent blobs are '' rather than
-- NULL so that rows carry no null bitmap. Fixed-width columns come first to
-- avoid alignment padding.

-- One row per checkpoint chain (thread, namespace). head is the target of the
-- compare-and-set in Commit; updated_at and finished drive PruneThreads.
-- chain_id needs no index: rows are always found by (thread_id, ns).
CREATE TABLE graph_chains (
    chain_id   bigint  GENERATED ALWAYS AS IDENTITY,
    head       bigint  NOT NULL,
    updated_at bigint  NOT NULL,
    finished   boolean NOT NULL,
    thread_id  text    NOT NULL,
    ns         text    NOT NULL,
    PRIMARY KEY (thread_id, ns)
);

CREATE TABLE graph_checkpoints (
    chain_id   bigint  NOT NULL,
    id         bigint  NOT NULL,
    parent_id  bigint  NOT NULL,
    created_at bigint  NOT NULL,
    step       integer NOT NULL,
    source     text    NOT NULL,
    snapshot   bytea   NOT NULL,
    delta      bytea   NOT NULL,
    next       bytea   NOT NULL,
    meta       bytea   NOT NULL,
    PRIMARY KEY (chain_id, id)
);

-- Pending writes: the results of the tasks run from a checkpoint.
CREATE TABLE graph_writes (
    chain_id      bigint  NOT NULL,
    checkpoint_id bigint  NOT NULL,
    task          integer NOT NULL,
    idx           integer NOT NULL,
    channel       text    NOT NULL,
    value         bytea   NOT NULL,
    PRIMARY KEY (chain_id, checkpoint_id, task, idx)
);

-- Tombstones: a deleted thread stays deleted.
CREATE TABLE graph_deleted_threads (
    thread_id  text   PRIMARY KEY,
    deleted_at bigint NOT NULL
);
