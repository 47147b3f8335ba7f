package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Runs is research.Store on the Store's database (tables bot_* and jobs),
// shared by any number of processes. A run is a row of bot_runs (the
// columns that conditions read, and the rest as one JSON text, detail:
// jobmap.RunDetail) and a KindRun job (migration 0010) that holds its lease and state
// (jobmap.RunJob), read with a JOIN; the inbox and the event keys are jobs
// too (inbox.go). The lease rules are jobs.go's: conditional UPDATEs (READ
// COMMITTED re-checks the condition on the latest row version, so exactly
// one of concurrent callers wins), and FOR UPDATE SKIP LOCKED for
// AcquireRuns, run in this file's transactions. CreateRun serialises on
// transaction-scoped advisory locks on the requester and the thread before
// it checks the jobs of their runs and inserts; Decide and RequestCancel
// lock the run's row before they read its state. Times are stored as Unix
// nanoseconds (0: zero time) and read back in UTC.
type Runs struct {
	s *Store
}

var _ research.Store = (*Runs)(nil)

// NewRuns returns the research.Store on s's database. It shares s's pool:
// closing s closes it.
func NewRuns(s *Store) *Runs { return &Runs{s: s} }

// Advisory lock classes of CreateRun (key 2 is hashtext of the value).
const (
	lockBotUser   int32 = 0x64726275 // "drbu": requester
	lockBotThread int32 = 0x64726274 // "drbt": graph thread id
)

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// botRunCols are the columns scanBotRun reads: the run's row r and its job
// j (botRunFrom), seq first.
const botRunCols = `r.seq, r.id, r.thread_id, r.team, r.channel, r.thread_ts, r.requester,
	r.status_ts, r.intr_id, r.dec_interrupt_id, r.cancel_requested_by, r.created_at, r.updated_at, r.detail,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.updated_at, j.finished_at, j.error`

// botRunFrom joins a run's row to its job, which holds its lease and state.
const botRunFrom = ` FROM bot_runs r JOIN jobs j ON j.kind = 'run' AND j.key = r.id`

// botRunActiveFrom reads the active runs (queued, running, waiting) from
// their jobs, which the partial index jobs_active_runs (migration 0012)
// holds, each joined to its row: CreateRun's checks cost the number of
// active runs, not the history of the thread or the requester.
const botRunActiveFrom = ` FROM jobs j JOIN bot_runs r ON r.id = j.key
	WHERE j.kind = 'run' AND j.state IN ('ready', 'held', 'parked')`

// scanBotRun reads one row of botRunCols and returns the run and its seq.
func scanBotRun(row pgx.Row) (research.Run, int64, error) {
	var (
		r                           research.Run
		j                           jobs.Job
		seq                         int64
		state, detail               string
		created, updated            int64
		lease, jobUpdated, finished int64
		intrID, decID               *string
	)
	if err := row.Scan(&seq, &r.ID, &r.ThreadID, &r.Key.Team, &r.Key.Channel, &r.Key.ThreadTS, &r.Requester,
		&r.StatusTS, &intrID, &decID, &r.CancelRequestedBy, &created, &updated, &detail,
		&state, &j.Payload, &j.Owner, &lease, &j.Attempts, &jobUpdated, &finished, &j.Error); err != nil {
		return research.Run{}, 0, err
	}
	if err := jobmap.ReadRunDetail(&r, []byte(detail), intrID, decID); err != nil {
		return research.Run{}, 0, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	j.State, j.LeaseUntil, j.UpdatedAt, j.FinishedAt = jobs.State(state), jobTime(lease), jobTime(jobUpdated), jobTime(finished)
	jobmap.RunLease(&r, j)
	return r, seq, nil
}

// queryBotRun reads one run with q (which returns botRunCols); ErrNotFound if
// there is no row.
func queryBotRun(ctx context.Context, db jobDB, what, q string, args ...any) (research.Run, error) {
	r, _, err := scanBotRun(db.QueryRow(ctx, q, args...))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return research.Run{}, fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return research.Run{}, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return r, nil
}

// getBotRun reads a run; lock is "" or a locking clause on r.
func getBotRun(ctx context.Context, db jobDB, id string, lock string) (research.Run, error) {
	return queryBotRun(ctx, db, "run "+id, `SELECT `+botRunCols+botRunFrom+` WHERE r.id = $1`+lock, id)
}

const botThreadCols = `team, channel, thread_ts, thread_id, requester, dm, created_at`

func (b *Runs) thread(ctx context.Context, key research.ThreadKey) (research.Thread, error) {
	var t research.Thread
	var created int64
	err := b.s.pool.QueryRow(ctx, `SELECT `+botThreadCols+` FROM bot_threads WHERE team = $1 AND channel = $2 AND thread_ts = $3`,
		key.Team, key.Channel, key.ThreadTS).Scan(&t.Key.Team, &t.Key.Channel, &t.Key.ThreadTS, &t.ThreadID, &t.Requester, &t.DM, &created)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return research.Thread{}, fmt.Errorf("thread %v: %w", key, research.ErrNotFound)
	case err != nil:
		return research.Thread{}, fmt.Errorf("postgres: thread: %w", err)
	}
	t.CreatedAt = fromNanos(created)
	return t, nil
}

// PutThread implements research.Store. The insert waits for a concurrent insert
// of the same key to finish; the read that follows (a new snapshot) then
// sees whichever mapping was stored first.
func (b *Runs) PutThread(ctx context.Context, t research.Thread) (research.Thread, error) {
	if _, err := b.s.pool.Exec(ctx, `INSERT INTO bot_threads (`+botThreadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
		t.Key.Team, t.Key.Channel, t.Key.ThreadTS, t.ThreadID, t.Requester, t.DM, nanos(t.CreatedAt)); err != nil {
		return research.Thread{}, fmt.Errorf("postgres: put thread: %w", err)
	}
	return b.thread(ctx, t.Key)
}

// Thread implements research.Store.
func (b *Runs) Thread(ctx context.Context, key research.ThreadKey) (research.Thread, error) {
	return b.thread(ctx, key)
}

// CreateRun implements research.Store: under the advisory locks, the
// checks (id, busy thread, per-user limit, in memory.Runs' order) read the
// jobs of the thread's and the requester's runs, and the row and a ready
// job are inserted, in one transaction.
func (b *Runs) CreateRun(ctx context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	detail, err := jobmap.RunDetail(r)
	if err != nil {
		return fmt.Errorf("postgres: create run: %w", err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	var intrID, decID *string
	if r.Interrupt != nil {
		intrID = &r.Interrupt.ID
	}
	if r.Decision != nil {
		decID = &r.Decision.InterruptID
	}
	err = pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		// Requester first, then thread: every CreateRun takes them in this
		// order, so they cannot deadlock. Each statement after the locks
		// reads a snapshot taken once it holds them.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockBotUser, r.Requester); err != nil {
			return fmt.Errorf("postgres: create run: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockBotThread, r.ThreadID); err != nil {
			return fmt.Errorf("postgres: create run: lock: %w", err)
		}
		var exists, busy bool
		var perUser int
		if err := tx.QueryRow(ctx, `SELECT
				EXISTS (SELECT 1 FROM bot_runs WHERE id = $1),
				EXISTS (SELECT 1`+botRunActiveFrom+` AND r.thread_id = $2),
				(SELECT count(*)`+botRunActiveFrom+` AND r.requester = $3)`,
			r.ID, r.ThreadID, r.Requester).Scan(&exists, &busy, &perUser); err != nil {
			return fmt.Errorf("postgres: create run: %w", err)
		}
		switch {
		case exists:
			return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
		case busy:
			return fmt.Errorf("thread %s: %w", r.ThreadID, research.ErrThreadBusy)
		case maxPerUser > 0 && perUser >= maxPerUser:
			return fmt.Errorf("user %s has %d: %w", r.Requester, perUser, research.ErrUserLimit)
		}
		_, err := tx.Exec(ctx, `INSERT INTO bot_runs (
				id, thread_id, team, channel, thread_ts, requester, status_ts, intr_id, dec_interrupt_id,
				cancel_requested_by, created_at, updated_at, detail)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.ID, r.ThreadID, r.Key.Team, r.Key.Channel, r.Key.ThreadTS, r.Requester, r.StatusTS, intrID, decID,
			r.CancelRequestedBy, nanos(r.CreatedAt), nanos(r.UpdatedAt), string(detail))
		if err != nil {
			return fmt.Errorf("postgres: create run %s: %w", r.ID, err)
		}
		stored, err := putJobs(ctx, tx, []jobs.Job{jobmap.RunJob(r)})
		if err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		if !stored[0] {
			return fmt.Errorf("postgres: create run %s: its job exists already", r.ID)
		}
		return nil
	})
	// The primary key backs the id check (it cannot fire while every
	// writer takes the locks, but says the same if it does).
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
	}
	return err
}

// Run implements research.Store.
func (b *Runs) Run(ctx context.Context, id string) (research.Run, error) {
	return getBotRun(ctx, b.s.pool, id, "")
}

// LatestRun implements research.Store.
func (b *Runs) LatestRun(ctx context.Context, threadID string) (research.Run, error) {
	return queryBotRun(ctx, b.s.pool, "latest run of "+threadID,
		`SELECT `+botRunCols+botRunFrom+` WHERE r.thread_id = $1 ORDER BY r.seq DESC LIMIT 1`, threadID)
}

// ListRuns implements research.Store.
func (b *Runs) ListRuns(ctx context.Context, f research.RunFilter) ([]research.Run, error) {
	var where []string
	var args []any
	if f.Requester != "" {
		args = append(args, f.Requester)
		where = append(where, fmt.Sprintf("r.requester = $%d", len(args)))
	}
	if f.Channel != "" {
		args = append(args, f.Channel)
		where = append(where, fmt.Sprintf("r.channel = $%d", len(args)))
	}
	if len(f.States) > 0 {
		var or []string
		for _, st := range f.States {
			js, p := jobmap.RunJobStates(st)
			args = append(args, string(js))
			w := fmt.Sprintf("j.state = $%d", len(args))
			switch {
			case p == nil:
			case len(p) == 0:
				args = append(args, []byte(jobmap.RunCancelled))
				w += fmt.Sprintf(" AND j.payload <> $%d", len(args))
			default:
				args = append(args, p)
				w += fmt.Sprintf(" AND j.payload = $%d", len(args))
			}
			or = append(or, "("+w+")")
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	q := `SELECT ` + botRunCols + botRunFrom
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY r.seq DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := b.s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	var out []research.Run
	for rows.Next() {
		r, _, err := scanBotRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return out, nil
}

// AcquireRun implements research.Store: ClaimKey, then the run read (the
// claim is the compare-and-set; the read needs no transaction with it).
func (b *Runs) AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	_, err := claimJobKey(ctx, b.s.pool, jobs.KindRun, id, owner, now, lease, 0)
	switch {
	case errors.Is(err, jobs.ErrNotClaimable):
		return research.Run{}, fmt.Errorf("run %s: %w: %w", id, research.ErrNotAcquired, err)
	case err != nil:
		return research.Run{}, jobmap.ResearchErr(err)
	}
	return getBotRun(ctx, b.s.pool, id, "")
}

// AcquireRuns implements research.Store: Claim (FOR UPDATE SKIP LOCKED),
// oldest first, then the claimed runs read in one query.
func (b *Runs) AcquireRuns(ctx context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	got, err := claimJobsOf(ctx, b.s.pool, jobs.KindRun, &kind, owner, now, lease, limit, 0)
	if err != nil {
		return nil, fmt.Errorf("acquire runs: %w", err)
	}
	if len(got) == 0 {
		return nil, nil
	}
	ids := make([]string, len(got))
	for i, j := range got {
		ids[i] = j.Key
	}
	rows, err := b.s.pool.Query(ctx, `SELECT `+botRunCols+botRunFrom+` WHERE r.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: acquire runs: %w", err)
	}
	defer rows.Close()
	byID := make(map[string]research.Run, len(got))
	for rows.Next() {
		r, _, err := scanBotRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: acquire runs: %w", err)
		}
		byID[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: acquire runs: %w", err)
	}
	out := make([]research.Run, 0, len(got))
	for _, id := range ids {
		r, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("acquire runs: run %s: %w", id, research.ErrNotFound)
		}
		out = append(out, r)
	}
	return out, nil
}

// Heartbeat implements research.Store: Extend.
func (b *Runs) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	if _, err := extendJob(ctx, b.s.pool, jobs.KindRun, id, owner, now, lease); err != nil {
		return research.Run{}, jobmap.ResearchErr(err)
	}
	return getBotRun(ctx, b.s.pool, id, "")
}

// ReleaseRun implements research.Store: Release (a clean hand-back gives
// its pickup back).
func (b *Runs) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	_, err := releaseJob(ctx, b.s.pool, jobs.KindRun, id, owner, now)
	return jobmap.ResearchErr(err)
}

// WaitRun implements research.Store: Park, and the interrupt recorded with
// the decision cleared, in one transaction.
func (b *Runs) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	return pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		if _, err := parkJob(ctx, tx, jobs.KindRun, id, owner, nil, now); err != nil {
			return jobmap.ResearchErr(err)
		}
		r, err := getBotRun(ctx, tx, id, " FOR NO KEY UPDATE OF r")
		if err != nil {
			return err
		}
		r.Interrupt, r.Decision = &intr, nil
		detail, err := jobmap.RunDetail(r)
		if err != nil {
			return fmt.Errorf("postgres: wait run: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE bot_runs SET intr_id = $2, dec_interrupt_id = NULL, detail = $3 WHERE id = $1`,
			id, intr.ID, string(detail)); err != nil {
			return fmt.Errorf("postgres: wait run %s: %w", id, err)
		}
		return nil
	})
}

// FinishRun implements research.Store: Finish.
func (b *Runs) FinishRun(ctx context.Context, id, owner string, state research.RunState, errText string, now time.Time) error {
	errText = dbtext.String(errText)
	js, payload, err := jobmap.RunFinish(state)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	_, err = finishJob(ctx, b.s.pool, jobs.KindRun, id, owner, js, errText, payload, now)
	return jobmap.ResearchErr(err)
}

// SetStatusMessage implements research.Store.
func (b *Runs) SetStatusMessage(ctx context.Context, id, ts string) (string, error) {
	var out string
	err := b.s.pool.QueryRow(ctx, `UPDATE bot_runs SET status_ts = CASE WHEN status_ts = '' THEN $1 ELSE status_ts END
		WHERE id = $2 RETURNING status_ts`, ts, id).Scan(&out)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("run %s: %w", id, research.ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("postgres: set status message: %w", err)
	}
	return out, nil
}

// Decide implements research.Store: with the run's row locked, the checks
// of jobmap.DecideRefusal on the run as stored, then Cancel (a cancel) or
// Unpark (a compare-and-set) of its job and the decision recorded, in one
// transaction.
func (b *Runs) Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	cancel := d.Action == research.ActionCancel
	var r research.Run
	err := pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		var err error
		if r, err = getBotRun(ctx, tx, runID, " FOR NO KEY UPDATE OF r"); err != nil {
			return err
		}
		if err := jobmap.DecideRefusal(r, d); err != nil {
			return err
		}
		if cancel {
			err = cancelJob(ctx, tx, jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), d.At)
		} else {
			_, err = unparkJob(ctx, tx, jobs.KindRun, runID, nil, d.At)
		}
		if err != nil {
			return fmt.Errorf("decide run %s: %w: %w", runID, research.ErrNotWaiting, err)
		}
		next := r
		next.Decision = &d
		detail, err := jobmap.RunDetail(next)
		if err != nil {
			return fmt.Errorf("postgres: decide: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE bot_runs SET dec_interrupt_id = $2, detail = $3, updated_at = $4,
				cancel_requested_by = CASE WHEN $5::boolean THEN $6 ELSE cancel_requested_by END
			WHERE id = $1`, runID, d.InterruptID, string(detail), nanos(d.At), cancel, d.By); err != nil {
			return fmt.Errorf("postgres: decide run %s: %w", runID, err)
		}
		r, err = getBotRun(ctx, tx, runID, "")
		return err
	})
	return r, err
}

// RequestCancel implements research.Store: one transaction holding the
// run's row lock from the read to the change. A queued or waiting run's job
// is failed as cancelled (Cancel); one acquired meanwhile (acquiring does
// not take the row lock) is handled as running: it gets CancelRequestedBy,
// which its owner sees in Heartbeat; a finished run gets ErrFinished.
func (b *Runs) RequestCancel(ctx context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	var r research.Run
	var cancelled bool
	err := pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		cur, err := getBotRun(ctx, tx, runID, " FOR NO KEY UPDATE OF r")
		if err != nil {
			return err
		}
		if cur.State == research.StateQueued || cur.State == research.StateWaiting {
			err := cancelJob(ctx, tx, jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), now)
			switch {
			case err == nil:
				cancelled = true
				if _, err := tx.Exec(ctx, `UPDATE bot_runs SET cancel_requested_by = $2, updated_at = $3 WHERE id = $1`,
					runID, by, nanos(now)); err != nil {
					return fmt.Errorf("postgres: cancel run %s: %w", runID, err)
				}
				r, err = getBotRun(ctx, tx, runID, "")
				return err
			case !errors.Is(err, jobs.ErrNotClaimable):
				return fmt.Errorf("cancel run %s: %w", runID, err)
			}
			if cur, err = getBotRun(ctx, tx, runID, ""); err != nil {
				return err
			}
		}
		if cur.State != research.StateRunning {
			r = cur
			return fmt.Errorf("run %s is %s: %w", runID, cur.State, research.ErrFinished)
		}
		if cur.CancelRequestedBy != "" {
			r = cur
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE bot_runs SET cancel_requested_by = $2, updated_at = $3 WHERE id = $1`,
			runID, by, nanos(now)); err != nil {
			return fmt.Errorf("postgres: cancel run %s: %w", runID, err)
		}
		r, err = getBotRun(ctx, tx, runID, "")
		return err
	})
	if err != nil && !errors.Is(err, research.ErrFinished) {
		return research.Run{}, false, err
	}
	return r, cancelled, err
}

// RecordUpload implements research.Store.
func (b *Runs) RecordUpload(ctx context.Context, u research.Upload) (bool, error) {
	tag, err := b.s.pool.Exec(ctx, `INSERT INTO bot_uploads (run_id, file_id, message_ts, at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		u.RunID, u.FileID, u.MessageTS, nanos(u.At))
	if err != nil {
		return false, fmt.Errorf("postgres: record upload: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Upload implements research.Store.
func (b *Runs) Upload(ctx context.Context, runID string) (research.Upload, error) {
	u := research.Upload{RunID: runID}
	var at int64
	err := b.s.pool.QueryRow(ctx, `SELECT file_id, message_ts, at FROM bot_uploads WHERE run_id = $1`, runID).Scan(&u.FileID, &u.MessageTS, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return research.Upload{}, fmt.Errorf("upload of %s: %w", runID, research.ErrNotFound)
	case err != nil:
		return research.Upload{}, fmt.Errorf("postgres: upload: %w", err)
	}
	u.At = fromNanos(at)
	return u, nil
}

// StageUpload implements research.Store.
func (b *Runs) StageUpload(ctx context.Context, runID, fileID string, at time.Time) error {
	if _, err := b.s.pool.Exec(ctx, `INSERT INTO bot_staged_files (run_id, file_id, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		runID, fileID, nanos(at)); err != nil {
		return fmt.Errorf("postgres: stage upload: %w", err)
	}
	return nil
}

// StagedUploads implements research.Store.
func (b *Runs) StagedUploads(ctx context.Context, runID string) ([]string, error) {
	rows, err := b.s.pool.Query(ctx, `SELECT file_id FROM bot_staged_files WHERE run_id = $1 ORDER BY at, file_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres: staged uploads: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: staged uploads: %w", err)
	}
	return ids, nil
}

// UnstageUpload implements research.Store.
func (b *Runs) UnstageUpload(ctx context.Context, runID, fileID string) error {
	if _, err := b.s.pool.Exec(ctx, `DELETE FROM bot_staged_files WHERE run_id = $1 AND file_id = $2`, runID, fileID); err != nil {
		return fmt.Errorf("postgres: unstage upload: %w", err)
	}
	return nil
}
