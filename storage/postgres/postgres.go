// Package postgres is the shared engine: PostgreSQL through pgx/v5, its
// migrations, the pool that storage/sqlstore's stores run on (SQL), and the
// checkpoint store (graph.Saver). The checkpoint store behaves like
// memsaver, the reference, and any number of processes may share one
// database: a chain's head is moved by a conditional UPDATE
// (compare-and-set) in the same statement that inserts the batch.
//
// Performance. A Commit is one statement, one round trip, one transaction: an
// UPDATE (or INSERT, for a new chain) of the chain row whose RETURNING feeds
// multi-row INSERTs built from unnest()ed arrays. A new chain also takes a
// shared advisory lock on the thread, pipelined in the same round trip, so
// that it cannot slip past a concurrent DeleteThread. Load is one recursive
// query that walks parent ids back to the nearest snapshot and aggregates
// each checkpoint's writes. The failure paths (conflict, deleted thread,
// missing parent) spend a second query to say which error it was.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"deepresearch/graph"
	"deepresearch/storage/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DefaultMaxRecordBytes bounds one checkpoint field or write value.
const DefaultMaxRecordBytes = 64 << 20

// Advisory lock classes (the first key of the two-key form).
const (
	lockThread int32 = 0x64727468 // "drth": key 2 is hashtext(thread_id)
)

// tables holds every table with checkpoint data (the migrations table aside).
var tables = []string{"graph_chains", "graph_checkpoints", "graph_writes", "graph_deleted_threads"}

// Options configure Open.
type Options struct {
	URL            string           // postgres://… or key=value; search_path may be set as a parameter
	MaxRecordBytes int              // 0: DefaultMaxRecordBytes
	Tracer         pgx.QueryTracer  // optional: sees every statement (the benchmark counts them)
	MaxConns       int32            // pool size; 0: pgxpool's default
	Now            func() time.Time // nil: time.Now
}

// Store is a graph.Saver on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	sql      *sqlstore.DB
	maxBytes int
	now      func() time.Time
}

var _ graph.Saver = (*Store)(nil)

// Open connects and applies any pending migrations.
func Open(ctx context.Context, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	// Every statement here is keyed on primary keys, so a generic plan is
	// always right; planning each execution (Postgres' default for the first
	// runs of a prepared statement) costs more than running it.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := &Store{pool: pool, sql: sqlstore.OnPostgres(pool), maxBytes: opts.MaxRecordBytes, now: opts.Now}
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Pool returns the connection pool, for other packages' tables in the same
// database (its runs, schedules, notes and jobs stores).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool, waiting for connections in use to be released.
func (s *Store) Close() { s.pool.Close() }

// TableNames lists every table that holds checkpoint data (not the migrations
// bookkeeping table), for size measurements.
func (s *Store) TableNames() []string { return append([]string(nil), tables...) }

// Truncate empties every checkpoint table (benchmarks; never in production).
func (s *Store) Truncate(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `TRUNCATE graph_chains, graph_checkpoints, graph_writes, graph_deleted_threads`); err != nil {
		return fmt.Errorf("postgres: truncate: %w", err)
	}
	return nil
}

// Migrate applies the embedded migrations not yet recorded in the database,
// all in one transaction under an advisory lock, so that processes starting
// at once apply each exactly once (the others wait, then find nothing to do).
func (s *Store) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	return s.sql.Migrate(ctx, sub, s.now)
}

// nonNil maps nil to an empty bytea: blobs are NOT NULL, and empty means absent.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// orNil maps an empty bytea read back to nil, as memsaver returns it.
func orNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// The inserts shared by both Commit statements: $8…$16 are the checkpoints'
// columns as arrays, $17…$21 the writes'. h is the chain row CTE.
const insertBatch = `,
k AS (
	INSERT INTO graph_checkpoints (chain_id, id, parent_id, created_at, step, source, snapshot, delta, next, meta)
	SELECT h.chain_id, u.*
	FROM h, unnest($8::bigint[], $9::bigint[], $10::bigint[], $11::integer[], $12::text[], $13::bytea[], $14::bytea[], $15::bytea[], $16::bytea[]) AS u
),
w AS (
	INSERT INTO graph_writes (chain_id, checkpoint_id, task, idx, channel, value)
	SELECT h.chain_id, u.*
	FROM h, unnest($17::bigint[], $18::integer[], $19::integer[], $20::text[], $21::bytea[]) AS u
	ON CONFLICT DO NOTHING
)
SELECT count(*) FROM h`

// commitSQL advances an existing chain: compare-and-set on head, the first
// checkpoint's parent must exist ($7 = 0: no parent). With no checkpoints it
// leaves head ($4 = $3) and finished ($6 NULL) and only stores writes.
const commitSQL = `WITH h AS (
	UPDATE graph_chains c
	SET head = $4, updated_at = $5, finished = coalesce($6::boolean, c.finished)
	WHERE c.thread_id = $1 AND c.ns = $2 AND c.head = $3::bigint
	  AND ($7::bigint = 0 OR EXISTS (SELECT 1 FROM graph_checkpoints p WHERE p.chain_id = c.chain_id AND p.id = $7))
	RETURNING c.chain_id
)` + insertBatch

// newChainSQL starts a chain (ExpectHead 0), unless the thread was deleted or
// someone else started it first.
const newChainSQL = `WITH h AS (
	INSERT INTO graph_chains (thread_id, ns, head, updated_at, finished)
	SELECT $1, $2, $4, $5, $6::boolean
	WHERE $3::bigint = 0 AND $7::bigint = 0
	  AND NOT EXISTS (SELECT 1 FROM graph_deleted_threads d WHERE d.thread_id = $1)
	ON CONFLICT (thread_id, ns) DO NOTHING
	RETURNING chain_id
)` + insertBatch

// Commit implements graph.Saver.
func (s *Store) Commit(ctx context.Context, b *graph.Batch) error {
	args, err := s.commitArgs(ctx, b)
	if err != nil || args == nil {
		return err
	}
	var rows int
	if b.ExpectHead != 0 {
		err = s.pool.QueryRow(ctx, commitSQL, args...).Scan(&rows)
	} else {
		// The shared thread lock, taken by an earlier statement of the same
		// implicit transaction, orders this against DeleteThread: the insert's
		// snapshot is taken after it and so sees any tombstone.
		batch := &pgx.Batch{}
		batch.Queue(`SELECT pg_advisory_xact_lock_shared($1, hashtext($2))`, lockThread, b.ThreadID)
		batch.Queue(newChainSQL, args...).QueryRow(func(r pgx.Row) error { return r.Scan(&rows) })
		err = s.pool.SendBatch(ctx, batch).Close()
	}
	return s.commitResult(ctx, b, rows, err)
}

// commitResult maps the outcome of a commit statement to Saver errors.
func (s *Store) commitResult(ctx context.Context, b *graph.Batch, rows int, err error) error {
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.TableName == "graph_checkpoints" {
			return fmt.Errorf("postgres: a checkpoint id of the batch is taken: %w", graph.ErrConflict)
		}
		return fmt.Errorf("postgres: commit: %w", err)
	}
	if rows == 0 {
		if err := s.why(ctx, b); err != nil {
			return err
		}
		return fmt.Errorf("postgres: chain changed during the commit: %w", graph.ErrConflict)
	}
	return nil
}

// commitArgs checks batch b and returns the arguments of commitSQL and
// newChainSQL for it, or none for an empty batch that is no error.
func (s *Store) commitArgs(ctx context.Context, b *graph.Batch) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := graph.CheckBatch(b, s.maxBytes); err != nil {
		return nil, err
	}
	if len(b.Checkpoints) == 0 {
		ok := len(b.Writes) > 0 && b.ExpectHead != 0
		for _, w := range b.Writes {
			ok = ok && w.CheckpointID == b.ExpectHead
		}
		if !ok {
			// An empty batch, or writes that cannot be stored: say why.
			err := s.why(ctx, b)
			if err == nil && len(b.Writes) > 0 {
				err = fmt.Errorf("writes are not all for head %d: %w", b.ExpectHead, graph.ErrConflict)
			}
			return nil, err // (nil, nil): an empty batch, nothing to do
		}
	}
	now := s.now().UnixNano()
	n := len(b.Checkpoints)
	var (
		ids, parents, created = make([]int64, n), make([]int64, n), make([]int64, n)
		steps                 = make([]int32, n)
		sources               = make([]string, n)
		snaps, deltas, nexts  = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		metas                 = make([][]byte, n)
	)
	for i, cp := range b.Checkpoints {
		ids[i], parents[i], steps[i], sources[i] = cp.ID, cp.ParentID, int32(cp.Step), cp.Source
		created[i] = now
		if !cp.CreatedAt.IsZero() {
			created[i] = cp.CreatedAt.UnixNano()
		}
		snaps[i], deltas[i], nexts[i], metas[i] = nonNil(cp.Snapshot), nonNil(cp.Delta), nonNil(cp.Next), nonNil(cp.Meta)
	}
	m := len(b.Writes)
	var (
		wcps        = make([]int64, m)
		tasks, idxs = make([]int32, m), make([]int32, m)
		channels    = make([]string, m)
		values      = make([][]byte, m)
	)
	for i, w := range b.Writes {
		wcps[i], tasks[i], idxs[i], channels[i], values[i] = w.CheckpointID, int32(w.Task), int32(w.Idx), w.Channel, nonNil(w.Value)
	}
	head, parent := b.ExpectHead, int64(0)
	var finished *bool
	if n > 0 {
		head, parent, finished = ids[n-1], parents[0], &b.Finished
	}
	return []any{b.ThreadID, b.NS, b.ExpectHead, head, now, finished, parent,
		ids, parents, created, steps, sources, snaps, deltas, nexts, metas,
		wcps, tasks, idxs, channels, values}, nil
}

// why says why batch b cannot be applied now, in memsaver's order of checks,
// or returns nil if it finds no reason.
func (s *Store) why(ctx context.Context, b *graph.Batch) error {
	var parent int64
	if len(b.Checkpoints) > 0 {
		parent = b.Checkpoints[0].ParentID
	}
	var deleted, parentOK bool
	var head *int64
	err := s.pool.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM graph_deleted_threads WHERE thread_id = $1),
		(SELECT head FROM graph_chains WHERE thread_id = $1 AND ns = $2),
		$3::bigint = 0 OR EXISTS (SELECT 1 FROM graph_chains c JOIN graph_checkpoints k ON k.chain_id = c.chain_id
			WHERE c.thread_id = $1 AND c.ns = $2 AND k.id = $3)`,
		b.ThreadID, b.NS, parent).Scan(&deleted, &head, &parentOK)
	if err != nil {
		return fmt.Errorf("postgres: read chain: %w", err)
	}
	var h int64
	if head != nil {
		h = *head
	}
	switch {
	case deleted:
		return graph.ErrThreadDeleted
	case h != b.ExpectHead:
		return fmt.Errorf("head is %d, expected %d: %w", h, b.ExpectHead, graph.ErrConflict)
	case len(b.Checkpoints) == 0 && len(b.Writes) > 0 && h == 0:
		return fmt.Errorf("no head to attach writes to: %w", graph.ErrConflict)
	case len(b.Checkpoints) > 0 && !parentOK:
		return fmt.Errorf("postgres: parent %d of checkpoint %d is not in the chain: %w", parent, b.Checkpoints[0].ID, graph.ErrNotFound)
	}
	return nil
}

// PutResume implements graph.Saver.
func (s *Store) PutResume(ctx context.Context, thread, ns string, cpID int64, w graph.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(w.Value) > s.maxBytes {
		return fmt.Errorf("resume %s: %d bytes > %d: %w", w.Channel, len(w.Value), s.maxBytes, graph.ErrTooLarge)
	}
	var onHead, inserted int
	err := s.pool.QueryRow(ctx, putResumeSQL,
		thread, ns, cpID, int32(w.Task), int32(w.Idx), w.Channel, nonNil(w.Value), s.now().UnixNano()).Scan(&onHead, &inserted)
	if err != nil {
		return fmt.Errorf("postgres: put resume: %w", err)
	}
	switch {
	case inserted > 0:
		return nil
	case onHead > 0:
		return graph.ErrAlreadyResumed
	}
	var deleted bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM graph_deleted_threads WHERE thread_id = $1)`, thread).Scan(&deleted); err != nil {
		return fmt.Errorf("postgres: read tombstone: %w", err)
	}
	if deleted {
		return graph.ErrThreadDeleted
	}
	return fmt.Errorf("checkpoint %d is not the head: %w", cpID, graph.ErrConflict)
}

// putResumeSQL stores a resume write if its checkpoint is the head, and says
// whether the checkpoint was the head and whether the write was new.
const putResumeSQL = `WITH h AS (
		SELECT chain_id FROM graph_chains WHERE thread_id = $1 AND ns = $2 AND head = $3 FOR NO KEY UPDATE
	), w AS (
		INSERT INTO graph_writes (chain_id, checkpoint_id, task, idx, channel, value)
		SELECT chain_id, $3, $4, $5, $6, $7 FROM h
		ON CONFLICT DO NOTHING
		RETURNING 1
	), u AS (
		UPDATE graph_chains SET updated_at = $8
		WHERE thread_id = $1 AND ns = $2 AND EXISTS (SELECT 1 FROM w)
	)
	SELECT (SELECT count(*) FROM h), (SELECT count(*) FROM w)`

// loadSQL returns one row per checkpoint from the target back to the nearest
// snapshot, oldest first, each with its writes as arrays sorted by (task,
// idx); or, when there is no such checkpoint, one row of NULLs. Every row
// carries the head and whether the thread was deleted.
const loadSQL = `WITH RECURSIVE c AS (
	SELECT chain_id, head FROM graph_chains WHERE thread_id = $1 AND ns = $2
), path AS (
	SELECT k.chain_id, k.id, k.parent_id, k.created_at, k.step, k.source, k.snapshot, k.delta, k.next, k.meta, 0 AS depth
	FROM c JOIN graph_checkpoints k ON k.chain_id = c.chain_id AND k.id = (CASE WHEN $3::bigint = 0 THEN c.head ELSE $3 END)
	UNION ALL
	SELECT k.chain_id, k.id, k.parent_id, k.created_at, k.step, k.source, k.snapshot, k.delta, k.next, k.meta, p.depth + 1
	FROM path p JOIN graph_checkpoints k ON k.chain_id = p.chain_id AND k.id = p.parent_id
	WHERE octet_length(p.snapshot) = 0
)
SELECT (SELECT head FROM c),
	EXISTS (SELECT 1 FROM graph_deleted_threads WHERE thread_id = $1),
	p.id, p.parent_id, p.created_at, p.step, p.source, p.snapshot, p.delta, p.next, p.meta,
	w.tasks, w.idxs, w.channels, w.vals
FROM (SELECT 1) AS one
LEFT JOIN path p ON true
LEFT JOIN LATERAL (
	SELECT array_agg(x.task ORDER BY x.task, x.idx) AS tasks,
		array_agg(x.idx ORDER BY x.task, x.idx) AS idxs,
		array_agg(x.channel ORDER BY x.task, x.idx) AS channels,
		array_agg(x.value ORDER BY x.task, x.idx) AS vals
	FROM graph_writes x WHERE x.chain_id = p.chain_id AND x.checkpoint_id = p.id
) w ON true
ORDER BY p.depth DESC`

// Load implements graph.Saver.
func (s *Store) Load(ctx context.Context, thread, ns string, id int64) (*graph.Chain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, loadSQL, thread, ns, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: load: %w", err)
	}
	return scanChain(rows, thread, ns)
}

// scanChain reads the rows of loadSQL.
func scanChain(rows pgx.Rows, thread, ns string) (*graph.Chain, error) {
	defer rows.Close()
	var (
		out     = &graph.Chain{}
		head    *int64
		deleted bool
	)
	for rows.Next() {
		var (
			cpID, parent, created *int64
			step                  *int32
			source                *string
			snapshot, delta, next []byte
			meta                  []byte
			tasks, idxs           []int32
			channels              []string
			vals                  [][]byte
		)
		if err := rows.Scan(&head, &deleted, &cpID, &parent, &created, &step, &source,
			&snapshot, &delta, &next, &meta, &tasks, &idxs, &channels, &vals); err != nil {
			return nil, fmt.Errorf("postgres: load: %w", err)
		}
		if cpID == nil {
			break
		}
		cp := &graph.StoredCheckpoint{
			ThreadID: thread, NS: ns, ID: *cpID, ParentID: *parent, Step: int(*step), Source: *source,
			Snapshot: orNil(snapshot), Delta: orNil(delta), Next: orNil(next), Meta: orNil(meta),
			CreatedAt: time.Unix(0, *created),
		}
		for i := range tasks {
			cp.Writes = append(cp.Writes, graph.PendingWrite{CheckpointID: cp.ID, Task: int(tasks[i]), Idx: int(idxs[i]),
				Channel: channels[i], Value: orNil(vals[i])})
		}
		out.Checkpoints = append(out.Checkpoints, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load: %w", err)
	}
	switch {
	case deleted:
		return nil, graph.ErrThreadDeleted
	case head == nil || len(out.Checkpoints) == 0:
		return nil, graph.ErrNotFound
	}
	if oldest := out.Checkpoints[0]; oldest.Snapshot == nil && oldest.ParentID != 0 {
		return nil, fmt.Errorf("postgres: checkpoint %d missing below %d: %w", oldest.ParentID, out.Checkpoints[len(out.Checkpoints)-1].ID, graph.ErrNotFound)
	}
	out.Head = *head
	return out, nil
}

// List implements graph.Saver. Metadata is filtered in Go with
// graph.MetaMatches, so every store matches alike.
func (s *Store) List(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var limit *int64
	if opts.Limit > 0 && len(opts.Meta) == 0 {
		l := int64(opts.Limit)
		limit = &l
	}
	rows, err := s.pool.Query(ctx, `SELECT k.id, k.parent_id, k.step, k.source, k.meta, k.created_at, octet_length(k.snapshot) > 0
		FROM graph_chains c JOIN graph_checkpoints k ON k.chain_id = c.chain_id
		WHERE c.thread_id = $1 AND c.ns = $2 AND ($3::bigint = 0 OR k.id < $3) AND ($4::text = '' OR k.source = $4)
		ORDER BY k.id DESC LIMIT $5`, thread, ns, opts.Before, opts.Source, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	defer rows.Close()
	var out []graph.CheckpointInfo
	for rows.Next() {
		var in graph.CheckpointInfo
		var step int32
		var created int64
		if err := rows.Scan(&in.ID, &in.ParentID, &step, &in.Source, &in.Meta, &created, &in.HasSnapshot); err != nil {
			return nil, fmt.Errorf("postgres: list: %w", err)
		}
		if !graph.MetaMatches(in.Meta, opts.Meta) {
			continue
		}
		in.Step, in.Meta, in.CreatedAt = int(step), orNil(in.Meta), time.Unix(0, created)
		out = append(out, in)
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	return out, nil
}

// ForgetThread implements graph.Saver: the thread's checkpoints and writes
// go, and no tombstone is left (the thread may be started afresh).
func (s *Store) ForgetThread(ctx context.Context, thread string) error {
	return s.dropThread(ctx, thread, false)
}

// DeleteThread implements graph.Saver: ForgetThread plus a tombstone that
// refuses the thread from now on.
func (s *Store) DeleteThread(ctx context.Context, thread string) error {
	return s.dropThread(ctx, thread, true)
}

// dropThread deletes a thread's chains in one round trip, one transaction:
// the exclusive thread lock waits out commits that are starting chains, the
// row locks wait out commits on existing chains, and only then does the
// delete take its snapshot, so nothing committed before it survives it.
func (s *Store) dropThread(ctx context.Context, thread string, tombstone bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockThread, thread)
	batch.Queue(`SELECT count(*) FROM (SELECT 1 FROM graph_chains WHERE thread_id = $1 FOR UPDATE) AS locked`, thread)
	if tombstone {
		batch.Queue(`INSERT INTO graph_deleted_threads (thread_id, deleted_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, thread, s.now().UnixNano())
	}
	batch.Queue(`WITH c AS (
			DELETE FROM graph_chains WHERE thread_id = $1 RETURNING chain_id
		), k AS (
			DELETE FROM graph_checkpoints WHERE chain_id IN (SELECT chain_id FROM c)
		), w AS (
			DELETE FROM graph_writes WHERE chain_id IN (SELECT chain_id FROM c)
		)
		SELECT count(*) FROM c`, thread)
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("postgres: delete thread: %w", err)
	}
	return nil
}

// PutSnapshot implements graph.Saver.
func (s *Store) PutSnapshot(ctx context.Context, thread, ns string, id int64, snapshot []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(snapshot) > s.maxBytes {
		return fmt.Errorf("snapshot of %d: %d bytes > %d: %w", id, len(snapshot), s.maxBytes, graph.ErrTooLarge)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE graph_checkpoints SET snapshot = $4
		WHERE chain_id = (SELECT chain_id FROM graph_chains WHERE thread_id = $1 AND ns = $2) AND id = $3`,
		thread, ns, id, nonNil(snapshot))
	if err != nil {
		return fmt.Errorf("postgres: put snapshot: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return graph.ErrNotFound
	}
	return nil
}

// DeleteBefore implements graph.Saver.
func (s *Store) DeleteBefore(ctx context.Context, thread, ns string, id int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH c AS (
			SELECT chain_id FROM graph_chains WHERE thread_id = $1 AND ns = $2
		), k AS (
			DELETE FROM graph_checkpoints WHERE chain_id = (SELECT chain_id FROM c) AND id < $3 RETURNING 1
		), w AS (
			DELETE FROM graph_writes WHERE chain_id = (SELECT chain_id FROM c) AND checkpoint_id < $3
		)
		SELECT count(*) FROM k`, thread, ns, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete before: %w", err)
	}
	return n, nil
}

// PruneThreads implements graph.Saver. The first statement locks the chains
// of the candidate threads (waiting out commits in flight); the second, with
// a fresh snapshot, re-selects the threads that still qualify and deletes them.
// The finished reports stored before olderThan (Reports) go too: they follow
// the same retention.
func (s *Store) PruneThreads(ctx context.Context, olderThan time.Time, finishedOnly bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	const old = `SELECT thread_id FROM graph_chains WHERE ns = '' AND updated_at < $1 AND (finished OR NOT $2::boolean)`
	cut := olderThan.UnixNano()
	var n int
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM past_reports WHERE created_at < $1`, cut)
	batch.Queue(`SELECT count(*) FROM (SELECT 1 FROM graph_chains WHERE thread_id IN (`+old+`) FOR UPDATE) AS locked`, cut, finishedOnly)
	batch.Queue(`WITH c AS (
			DELETE FROM graph_chains WHERE thread_id IN (`+old+`) RETURNING chain_id, ns
		), k AS (
			DELETE FROM graph_checkpoints WHERE chain_id IN (SELECT chain_id FROM c)
		), w AS (
			DELETE FROM graph_writes WHERE chain_id IN (SELECT chain_id FROM c)
		)
		SELECT count(*) FROM c WHERE ns = ''`, cut, finishedOnly).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", err)
	}
	return n, nil
}
