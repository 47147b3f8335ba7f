// Package sqlite is the embedded engine: one SQLite file through
// modernc.org/sqlite (pure Go), its migrations, the connections that
// storage/sqlstore's stores run on (SQL), and the checkpoint store
// (graph.Saver), which behaves like memsaver, the reference. Several
// processes may share the file: every write runs in a BEGIN IMMEDIATE
// transaction, so writers serialise on SQLite's lock (waiting up to the
// busy timeout) and the compare-and-set on a chain's head holds across
// processes.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite" // also registers the "sqlite" driver

	"deepresearch/graph"
	"deepresearch/storage/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DefaultMaxRecordBytes bounds one checkpoint field or write value.
const DefaultMaxRecordBytes = 64 << 20

// Options configure Open.
type Options struct {
	Path           string           // database file; it and its directory are created if missing
	MaxRecordBytes int              // 0: DefaultMaxRecordBytes
	BusyTimeout    time.Duration    // how long a writer waits for another's lock; 0: 30s
	MaxReaders     int              // read connections; 0: 4
	Now            func() time.Time // nil: time.Now
}

// Store is a graph.Saver on a SQLite file. It is safe for concurrent use.
type Store struct {
	w        *sql.DB // one connection; every transaction is BEGIN IMMEDIATE
	r        *sql.DB // readers (WAL lets them run beside the writer)
	sql      *sqlstore.DB
	maxBytes int
	now      func() time.Time
}

var _ graph.Saver = (*Store)(nil)

// Open opens (creating if needed) the database at opts.Path and applies any
// pending migrations.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" || opts.Path == ":memory:" || strings.ContainsAny(opts.Path, "?#") {
		return nil, fmt.Errorf("sqlite: invalid database path %q (need a file name without '?' or '#')", opts.Path)
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 30 * time.Second
	}
	if opts.MaxReaders <= 0 {
		opts.MaxReaders = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", opts.Path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	w, err := sql.Open("sqlite", opts.Path+"?"+q.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", opts.Path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	r.SetMaxOpenConns(opts.MaxReaders)
	s := &Store{w: w, r: r, sql: sqlstore.OnSQLite(w, r), maxBytes: opts.MaxRecordBytes, now: opts.Now}
	if err := s.migrateAtOpen(ctx, opts.BusyTimeout); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// migrateAtOpen runs Migrate, again while it meets SQLITE_BUSY, for up to
// busy. Processes that open a fresh file at once race to switch it to WAL,
// and while one does, another's BEGIN IMMEDIATE can fail with SQLITE_BUSY
// at once, without SQLite calling the busy handler (TestProcesses met it
// about once in 30 runs). After the switch, the busy timeout serialises
// writers as usual.
func (s *Store) migrateAtOpen(ctx context.Context, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := s.Migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlite: migrate: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// isBusy reports an SQLITE_BUSY error (any extended code).
func isBusy(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqliteBusy
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// DB returns the writer: one connection whose transactions begin IMMEDIATE,
// for the stores of this package (runs, schedules, notes, jobs).
func (s *Store) DB() *sql.DB { return s.w }

// Close closes the database. Calls in flight may fail.
func (s *Store) Close() error {
	return errors.Join(s.w.Close(), s.r.Close())
}

// Migrate applies the embedded migrations not yet recorded in the database,
// in one immediate transaction, so two processes starting at once apply each
// exactly once.
func (s *Store) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	return s.sql.Migrate(ctx, sub, s.now)
}

// write runs fn in an immediate transaction on the writer connection.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// read runs fn in a read transaction (one consistent snapshot).
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// nonNil maps nil to an empty blob: blobs are NOT NULL, and empty means absent.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// orNil maps an empty blob read back to nil, as memsaver returns it.
func orNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

type chainRow struct {
	id, head int64
	ok       bool
}

func (s *Store) chainOf(ctx context.Context, tx *sql.Tx, thread, ns string) (chainRow, error) {
	var c chainRow
	err := tx.QueryRowContext(ctx, `SELECT chain_id, head FROM graph_chains WHERE thread_id = ? AND ns = ?`, thread, ns).Scan(&c.id, &c.head)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("sqlite: read chain: %w", err)
	}
	c.ok = true
	return c, nil
}

func isDeleted(ctx context.Context, tx *sql.Tx, thread string) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM graph_deleted_threads WHERE thread_id = ?`, thread).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite: read tombstone: %w", err)
	}
	return n > 0, nil
}

func hasCheckpoint(ctx context.Context, tx *sql.Tx, chain, id int64) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM graph_checkpoints WHERE chain_id = ? AND id = ?`, chain, id).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite: read checkpoint: %w", err)
	}
	return n > 0, nil
}

func insertWrites(ctx context.Context, tx *sql.Tx, chain int64, ws []graph.PendingWrite) (int64, error) {
	if len(ws) == 0 {
		return 0, nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO graph_writes (chain_id, checkpoint_id, task, idx, channel, value)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return 0, fmt.Errorf("sqlite: insert writes: %w", err)
	}
	defer st.Close()
	var n int64
	for _, w := range ws {
		res, err := st.ExecContext(ctx, chain, w.CheckpointID, w.Task, w.Idx, w.Channel, nonNil(w.Value))
		if err != nil {
			return 0, fmt.Errorf("sqlite: insert write: %w", err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, nil
}

// Commit implements graph.Saver.
func (s *Store) Commit(ctx context.Context, b *graph.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := graph.CheckBatch(b, s.maxBytes); err != nil {
		return err
	}
	now := s.now().UnixNano()
	return s.write(ctx, func(tx *sql.Tx) error {
		if del, err := isDeleted(ctx, tx, b.ThreadID); err != nil {
			return err
		} else if del {
			return graph.ErrThreadDeleted
		}
		c, err := s.chainOf(ctx, tx, b.ThreadID, b.NS)
		if err != nil {
			return err
		}
		if c.head != b.ExpectHead {
			return fmt.Errorf("head is %d, expected %d: %w", c.head, b.ExpectHead, graph.ErrConflict)
		}
		if len(b.Checkpoints) == 0 {
			return commitWrites(ctx, tx, c, b.Writes, now)
		}
		return commitCheckpoints(ctx, tx, c, b, now)
	})
}

// commitWrites stores writes on chain c's head (a batch without
// checkpoints).
func commitWrites(ctx context.Context, tx *sql.Tx, c chainRow, ws []graph.PendingWrite, now int64) error {
	if len(ws) == 0 {
		return nil
	}
	for _, w := range ws {
		if c.head == 0 || w.CheckpointID != c.head {
			return fmt.Errorf("write for checkpoint %d, head is %d: %w", w.CheckpointID, c.head, graph.ErrConflict)
		}
	}
	if _, err := insertWrites(ctx, tx, c.id, ws); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE graph_chains SET updated_at = ? WHERE chain_id = ?`, now, c.id); err != nil {
		return fmt.Errorf("sqlite: update chain: %w", err)
	}
	return nil
}

// commitCheckpoints appends b's checkpoints (and writes) to chain c,
// starting the chain if it has none.
func commitCheckpoints(ctx context.Context, tx *sql.Tx, c chainRow, b *graph.Batch, now int64) error {
	first := b.Checkpoints[0]
	if p := first.ParentID; p != 0 {
		ok := false
		if c.ok {
			var err error
			if ok, err = hasCheckpoint(ctx, tx, c.id, p); err != nil {
				return err
			}
		}
		if !ok {
			return fmt.Errorf("sqlite: parent %d of checkpoint %d is not in the chain: %w", p, first.ID, graph.ErrNotFound)
		}
	}
	if err := moveHead(ctx, tx, &c, b, now); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO graph_checkpoints
		(chain_id, id, parent_id, step, created_at, source, snapshot, delta, next, meta)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite: insert checkpoints: %w", err)
	}
	defer st.Close()
	for _, cp := range b.Checkpoints {
		created := now
		if !cp.CreatedAt.IsZero() {
			created = cp.CreatedAt.UnixNano()
		}
		if _, err := st.ExecContext(ctx, c.id, cp.ID, cp.ParentID, cp.Step, created, cp.Source,
			nonNil(cp.Snapshot), nonNil(cp.Delta), nonNil(cp.Next), nonNil(cp.Meta)); err != nil {
			return fmt.Errorf("sqlite: insert checkpoint %d: %w", cp.ID, err)
		}
	}
	_, err = insertWrites(ctx, tx, c.id, b.Writes)
	return err
}

// moveHead points chain c at b's last checkpoint (refusing ids the chain
// has), or inserts the chain, setting c.id.
func moveHead(ctx context.Context, tx *sql.Tx, c *chainRow, b *graph.Batch, now int64) error {
	last := b.Checkpoints[len(b.Checkpoints)-1].ID
	if !c.ok {
		if err := tx.QueryRowContext(ctx, `INSERT INTO graph_chains (thread_id, ns, head, updated_at, finished)
			VALUES (?, ?, ?, ?, ?) RETURNING chain_id`, b.ThreadID, b.NS, last, now, b.Finished).Scan(&c.id); err != nil {
			return fmt.Errorf("sqlite: insert chain: %w", err)
		}
		return nil
	}
	for _, cp := range b.Checkpoints {
		if taken, err := hasCheckpoint(ctx, tx, c.id, cp.ID); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("sqlite: checkpoint id %d is taken: %w", cp.ID, graph.ErrConflict)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE graph_chains SET head = ?, updated_at = ?, finished = ? WHERE chain_id = ?`,
		last, now, b.Finished, c.id); err != nil {
		return fmt.Errorf("sqlite: update chain: %w", err)
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
	w.CheckpointID = cpID
	return s.write(ctx, func(tx *sql.Tx) error {
		if del, err := isDeleted(ctx, tx, thread); err != nil {
			return err
		} else if del {
			return graph.ErrThreadDeleted
		}
		c, err := s.chainOf(ctx, tx, thread, ns)
		if err != nil {
			return err
		}
		if !c.ok || c.head != cpID {
			return fmt.Errorf("checkpoint %d is not the head (%d): %w", cpID, c.head, graph.ErrConflict)
		}
		n, err := insertWrites(ctx, tx, c.id, []graph.PendingWrite{w})
		if err != nil {
			return err
		}
		if n == 0 {
			return graph.ErrAlreadyResumed
		}
		if _, err := tx.ExecContext(ctx, `UPDATE graph_chains SET updated_at = ? WHERE chain_id = ?`, s.now().UnixNano(), c.id); err != nil {
			return fmt.Errorf("sqlite: update chain: %w", err)
		}
		return nil
	})
}

// Load implements graph.Saver.
func (s *Store) Load(ctx context.Context, thread, ns string, id int64) (*graph.Chain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out *graph.Chain
	err := s.read(ctx, func(tx *sql.Tx) error {
		if del, err := isDeleted(ctx, tx, thread); err != nil {
			return err
		} else if del {
			return graph.ErrThreadDeleted
		}
		c, err := s.chainOf(ctx, tx, thread, ns)
		if err != nil {
			return err
		}
		if !c.ok {
			return graph.ErrNotFound
		}
		if id == 0 {
			id = c.head
		}
		rows, err := tx.QueryContext(ctx, `WITH RECURSIVE path(id, parent_id, step, created_at, source, snapshot, delta, next, meta, depth) AS (
				SELECT id, parent_id, step, created_at, source, snapshot, delta, next, meta, 0
				FROM graph_checkpoints WHERE chain_id = ?1 AND id = ?2
				UNION ALL
				SELECT k.id, k.parent_id, k.step, k.created_at, k.source, k.snapshot, k.delta, k.next, k.meta, p.depth + 1
				FROM path p JOIN graph_checkpoints k ON k.chain_id = ?1 AND k.id = p.parent_id
				WHERE length(p.snapshot) = 0
			)
			SELECT id, parent_id, step, created_at, source, snapshot, delta, next, meta FROM path ORDER BY depth DESC`, c.id, id)
		if err != nil {
			return fmt.Errorf("sqlite: load: %w", err)
		}
		defer rows.Close()
		out = &graph.Chain{Head: c.head}
		byID := map[int64]*graph.StoredCheckpoint{}
		var ids []int64
		for rows.Next() {
			cp := &graph.StoredCheckpoint{ThreadID: thread, NS: ns}
			var created int64
			if err := rows.Scan(&cp.ID, &cp.ParentID, &cp.Step, &created, &cp.Source,
				&cp.Snapshot, &cp.Delta, &cp.Next, &cp.Meta); err != nil {
				return fmt.Errorf("sqlite: load: %w", err)
			}
			cp.CreatedAt = time.Unix(0, created)
			cp.Snapshot, cp.Delta, cp.Next, cp.Meta = orNil(cp.Snapshot), orNil(cp.Delta), orNil(cp.Next), orNil(cp.Meta)
			out.Checkpoints = append(out.Checkpoints, cp)
			byID[cp.ID] = cp
			ids = append(ids, cp.ID)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: load: %w", err)
		}
		if len(out.Checkpoints) == 0 {
			return graph.ErrNotFound
		}
		if oldest := out.Checkpoints[0]; oldest.Snapshot == nil && oldest.ParentID != 0 {
			return fmt.Errorf("sqlite: checkpoint %d missing below %d: %w", oldest.ParentID, id, graph.ErrNotFound)
		}
		return loadWrites(ctx, tx, c.id, ids, byID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// loadWrites adds to byID's checkpoints (ids) their writes, in (task, idx)
// order.
func loadWrites(ctx context.Context, tx *sql.Tx, chain int64, ids []int64, byID map[int64]*graph.StoredCheckpoint) error {
	idsJSON, _ := json.Marshal(ids)
	wrows, err := tx.QueryContext(ctx, `SELECT checkpoint_id, task, idx, channel, value FROM graph_writes
		WHERE chain_id = ? AND checkpoint_id IN (SELECT value FROM json_each(?))
		ORDER BY checkpoint_id, task, idx`, chain, string(idsJSON))
	if err != nil {
		return fmt.Errorf("sqlite: load writes: %w", err)
	}
	defer wrows.Close()
	for wrows.Next() {
		var w graph.PendingWrite
		if err := wrows.Scan(&w.CheckpointID, &w.Task, &w.Idx, &w.Channel, &w.Value); err != nil {
			return fmt.Errorf("sqlite: load writes: %w", err)
		}
		w.Value = orNil(w.Value)
		cp := byID[w.CheckpointID]
		cp.Writes = append(cp.Writes, w)
	}
	if err := wrows.Err(); err != nil {
		return fmt.Errorf("sqlite: load writes: %w", err)
	}
	return nil
}

// List implements graph.Saver. Metadata is filtered in Go with
// graph.MetaMatches, so every store matches alike.
func (s *Store) List(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := -1
	if opts.Limit > 0 && len(opts.Meta) == 0 {
		limit = opts.Limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT k.id, k.parent_id, k.step, k.source, k.meta, k.created_at, length(k.snapshot) > 0
		FROM graph_chains c JOIN graph_checkpoints k ON k.chain_id = c.chain_id
		WHERE c.thread_id = ? AND c.ns = ? AND (?3 = 0 OR k.id < ?3) AND (?4 = '' OR k.source = ?4)
		ORDER BY k.id DESC LIMIT ?5`, thread, ns, opts.Before, opts.Source, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	defer rows.Close()
	var out []graph.CheckpointInfo
	for rows.Next() {
		var in graph.CheckpointInfo
		var created int64
		if err := rows.Scan(&in.ID, &in.ParentID, &in.Step, &in.Source, &in.Meta, &created, &in.HasSnapshot); err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", err)
		}
		if !graph.MetaMatches(in.Meta, opts.Meta) {
			continue
		}
		in.Meta = orNil(in.Meta)
		in.CreatedAt = time.Unix(0, created)
		out = append(out, in)
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
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

// dropThread deletes a thread's chains (and leaves a tombstone if asked) in
// one transaction.
func (s *Store) dropThread(ctx context.Context, thread string, tombstone bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	qs := []string{
		`DELETE FROM graph_writes WHERE chain_id IN (SELECT chain_id FROM graph_chains WHERE thread_id = ?1)`,
		`DELETE FROM graph_checkpoints WHERE chain_id IN (SELECT chain_id FROM graph_chains WHERE thread_id = ?1)`,
		`DELETE FROM graph_chains WHERE thread_id = ?1`,
	}
	if tombstone {
		qs = append([]string{`INSERT INTO graph_deleted_threads (thread_id, deleted_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING`}, qs...)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range qs {
			if _, err := tx.ExecContext(ctx, q, thread, s.now().UnixNano()); err != nil {
				return fmt.Errorf("sqlite: delete thread: %w", err)
			}
		}
		return nil
	})
}

// PutSnapshot implements graph.Saver.
func (s *Store) PutSnapshot(ctx context.Context, thread, ns string, id int64, snapshot []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(snapshot) > s.maxBytes {
		return fmt.Errorf("snapshot of %d: %d bytes > %d: %w", id, len(snapshot), s.maxBytes, graph.ErrTooLarge)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE graph_checkpoints SET snapshot = ?
			WHERE chain_id = (SELECT chain_id FROM graph_chains WHERE thread_id = ? AND ns = ?) AND id = ?`,
			nonNil(snapshot), thread, ns, id)
		if err != nil {
			return fmt.Errorf("sqlite: put snapshot: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return graph.ErrNotFound
		}
		return nil
	})
}

// DeleteBefore implements graph.Saver.
func (s *Store) DeleteBefore(ctx context.Context, thread, ns string, id int64) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		const chain = `(SELECT chain_id FROM graph_chains WHERE thread_id = ?1 AND ns = ?2)`
		if _, err := tx.ExecContext(ctx, `DELETE FROM graph_writes WHERE chain_id = `+chain+` AND checkpoint_id < ?3`, thread, ns, id); err != nil {
			return fmt.Errorf("sqlite: delete writes: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM graph_checkpoints WHERE chain_id = `+chain+` AND id < ?3`, thread, ns, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete checkpoints: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// PruneThreads implements graph.Saver. The finished reports stored before
// olderThan (Reports) go too: they follow the same retention.
func (s *Store) PruneThreads(ctx context.Context, olderThan time.Time, finishedOnly bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	const threads = `(SELECT thread_id FROM graph_chains WHERE ns = '' AND updated_at < ?1 AND (finished OR NOT ?2))`
	const chains = `(SELECT chain_id FROM graph_chains WHERE thread_id IN ` + threads + `)`
	var n int
	err := s.write(ctx, func(tx *sql.Tx) error {
		cut := olderThan.UnixNano()
		// stored reports follow the same retention (their runs finished)
		for _, q := range []string{
			`DELETE FROM past_report_terms WHERE rowid IN (SELECT id FROM past_reports WHERE created_at < ?)`,
			`DELETE FROM past_reports WHERE created_at < ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, cut); err != nil {
				return fmt.Errorf("sqlite: prune reports: %w", err)
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+threads, cut, finishedOnly).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: prune: %w", err)
		}
		if n == 0 {
			return nil
		}
		for _, q := range []string{
			`DELETE FROM graph_writes WHERE chain_id IN ` + chains,
			`DELETE FROM graph_checkpoints WHERE chain_id IN ` + chains,
			`DELETE FROM graph_chains WHERE thread_id IN ` + threads,
		} {
			if _, err := tx.ExecContext(ctx, q, cut, finishedOnly); err != nil {
				return fmt.Errorf("sqlite: prune: %w", err)
			}
		}
		return nil
	})
	return n, err
}
