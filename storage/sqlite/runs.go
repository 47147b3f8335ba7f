package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Runs is research.Store on the Store's database (tables bot_* and jobs).
// Every write is one BEGIN IMMEDIATE transaction on the writer connection,
// so writers serialise on SQLite's lock across connections and processes:
// the checks and the change of each method are one atomic step. Reads use
// the reader pool. Times are stored as Unix nanoseconds (0: zero time) and
// read back in UTC.
//
// A run is a row of bot_runs (the columns that conditions read, and the
// rest as one JSON text, detail: jobmap.RunDetail) and a KindRun job
// (migration 0010) that holds its lease and state (jobmap.RunJob), read
// with a JOIN; the inbox and the event keys are jobs too (inbox.go). The lease rules are
// jobs.go's, run inside this file's transactions.
type Runs struct {
	s *Store
}

var _ research.Store = (*Runs)(nil)

// NewRuns returns the research.Store on s's database. It shares s's
// connections: closing s closes it.
func NewRuns(s *Store) *Runs { return &Runs{s: s} }

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
// active runs, not the history of the thread or the requester. SQLite's
// planner, without statistics, would start from the requester's runs:
// INDEXED BY and CROSS JOIN (which keeps the left table outside) say where
// to start.
const botRunActiveFrom = ` FROM jobs j INDEXED BY jobs_active_runs CROSS JOIN bot_runs r ON r.id = j.key
	WHERE j.kind = 'run' AND j.state IN ('ready', 'held', 'parked')`

type botScanner interface{ Scan(dest ...any) error }

// scanBotRun reads one row of botRunCols and returns the run and its seq.
func scanBotRun(sc botScanner) (research.Run, int64, error) {
	var (
		r                           research.Run
		j                           jobs.Job
		seq                         int64
		created, updated            int64
		lease, jobUpdated, finished int64
		intrID, decID               sql.NullString
		detail                      []byte
	)
	if err := sc.Scan(&seq, &r.ID, &r.ThreadID, &r.Key.Team, &r.Key.Channel, &r.Key.ThreadTS, &r.Requester,
		&r.StatusTS, &intrID, &decID, &r.CancelRequestedBy, &created, &updated, &detail,
		&j.State, &j.Payload, &j.Owner, &lease, &j.Attempts, &jobUpdated, &finished, &j.Error); err != nil {
		return research.Run{}, 0, err
	}
	if err := jobmap.ReadRunDetail(&r, detail, nullString(intrID), nullString(decID)); err != nil {
		return research.Run{}, 0, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	j.LeaseUntil, j.UpdatedAt, j.FinishedAt = jobTime(lease), jobTime(jobUpdated), jobTime(finished)
	jobmap.RunLease(&r, j)
	return r, seq, nil
}

// nullString returns the string of n, or nil when it is NULL.
func nullString(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	return &n.String
}

// queryBotRun reads one run with q (which selects botRunCols); ErrNotFound if none.
func queryBotRun(ctx context.Context, db jobRower, what, q string, args ...any) (research.Run, error) {
	r, _, err := scanBotRun(db.QueryRowContext(ctx, q, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Run{}, fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return research.Run{}, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return r, nil
}

func getBotRun(ctx context.Context, db jobRower, id string) (research.Run, error) {
	return queryBotRun(ctx, db, "run "+id, `SELECT `+botRunCols+botRunFrom+` WHERE r.id = ?`, id)
}

const botThreadCols = `team, channel, thread_ts, thread_id, requester, dm, created_at`

func scanBotThread(sc botScanner) (research.Thread, error) {
	var t research.Thread
	var created int64
	if err := sc.Scan(&t.Key.Team, &t.Key.Channel, &t.Key.ThreadTS, &t.ThreadID, &t.Requester, &t.DM, &created); err != nil {
		return research.Thread{}, err
	}
	t.CreatedAt = fromNanos(created)
	return t, nil
}

// PutThread implements research.Store.
func (b *Runs) PutThread(ctx context.Context, t research.Thread) (research.Thread, error) {
	var out research.Thread
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO bot_threads (`+botThreadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			t.Key.Team, t.Key.Channel, t.Key.ThreadTS, t.ThreadID, t.Requester, t.DM, nanos(t.CreatedAt)); err != nil {
			return fmt.Errorf("sqlite: put thread: %w", err)
		}
		var err error
		out, err = scanBotThread(tx.QueryRowContext(ctx, `SELECT `+botThreadCols+` FROM bot_threads WHERE team = ? AND channel = ? AND thread_ts = ?`,
			t.Key.Team, t.Key.Channel, t.Key.ThreadTS))
		if err != nil {
			return fmt.Errorf("sqlite: put thread: %w", err)
		}
		return nil
	})
	return out, err
}

// Thread implements research.Store.
func (b *Runs) Thread(ctx context.Context, key research.ThreadKey) (research.Thread, error) {
	t, err := scanBotThread(b.s.r.QueryRowContext(ctx, `SELECT `+botThreadCols+` FROM bot_threads WHERE team = ? AND channel = ? AND thread_ts = ?`,
		key.Team, key.Channel, key.ThreadTS))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Thread{}, fmt.Errorf("thread %v: %w", key, research.ErrNotFound)
	case err != nil:
		return research.Thread{}, fmt.Errorf("sqlite: thread: %w", err)
	}
	return t, nil
}

// CreateRun implements research.Store: the checks (id, busy thread,
// per-user limit, in memory.Runs' order) read the jobs of the thread's and
// the requester's runs, and the row and a ready job are inserted, in one
// immediate transaction (writers serialise on the file's lock).
func (b *Runs) CreateRun(ctx context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	detail, err := jobmap.RunDetail(r)
	if err != nil {
		return fmt.Errorf("sqlite: create run: %w", err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	var intrID, decID sql.NullString
	if r.Interrupt != nil {
		intrID = sql.NullString{String: r.Interrupt.ID, Valid: true}
	}
	if r.Decision != nil {
		decID = sql.NullString{String: r.Decision.InterruptID, Valid: true}
	}
	return b.s.write(ctx, func(tx *sql.Tx) error {
		var exists, busy bool
		var perUser int
		if err := tx.QueryRowContext(ctx, `SELECT
				EXISTS (SELECT 1 FROM bot_runs WHERE id = ?1),
				EXISTS (SELECT 1`+botRunActiveFrom+` AND r.thread_id = ?2),
				(SELECT count(*)`+botRunActiveFrom+` AND r.requester = ?3)`,
			r.ID, r.ThreadID, r.Requester).Scan(&exists, &busy, &perUser); err != nil {
			return fmt.Errorf("sqlite: create run: %w", err)
		}
		switch {
		case exists:
			return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
		case busy:
			return fmt.Errorf("thread %s: %w", r.ThreadID, research.ErrThreadBusy)
		case maxPerUser > 0 && perUser >= maxPerUser:
			return fmt.Errorf("user %s has %d: %w", r.Requester, perUser, research.ErrUserLimit)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bot_runs (
				id, thread_id, team, channel, thread_ts, requester, status_ts, intr_id, dec_interrupt_id,
				cancel_requested_by, created_at, updated_at, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.ThreadID, r.Key.Team, r.Key.Channel, r.Key.ThreadTS, r.Requester, r.StatusTS, intrID, decID,
			r.CancelRequestedBy, nanos(r.CreatedAt), nanos(r.UpdatedAt), string(detail)); err != nil {
			return fmt.Errorf("sqlite: create run %s: %w", r.ID, err)
		}
		stored, err := putJobs(ctx, tx, []jobs.Job{jobmap.RunJob(r)})
		if err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		if !stored[0] {
			return fmt.Errorf("sqlite: create run %s: its job exists already", r.ID)
		}
		return nil
	})
}

// Run implements research.Store.
func (b *Runs) Run(ctx context.Context, id string) (research.Run, error) {
	return getBotRun(ctx, b.s.r, id)
}

// LatestRun implements research.Store.
func (b *Runs) LatestRun(ctx context.Context, threadID string) (research.Run, error) {
	return queryBotRun(ctx, b.s.r, "latest run of "+threadID,
		`SELECT `+botRunCols+botRunFrom+` WHERE r.thread_id = ? ORDER BY r.seq DESC LIMIT 1`, threadID)
}

// botRunStateWhere returns the condition (and its parameters) on a run's
// job that selects the runs in state s.
func botRunStateWhere(s research.RunState) (string, []any) {
	js, p := jobmap.RunJobStates(s)
	switch {
	case p == nil:
		return `j.state = ?`, []any{js}
	case len(p) == 0:
		return `(j.state = ? AND j.payload <> ?)`, []any{js, []byte(jobmap.RunCancelled)}
	}
	return `(j.state = ? AND j.payload = ?)`, []any{js, p}
}

// ListRuns implements research.Store.
func (b *Runs) ListRuns(ctx context.Context, f research.RunFilter) ([]research.Run, error) {
	var where []string
	var args []any
	if f.Requester != "" {
		where, args = append(where, "r.requester = ?"), append(args, f.Requester)
	}
	if f.Channel != "" {
		where, args = append(where, "r.channel = ?"), append(args, f.Channel)
	}
	if len(f.States) > 0 {
		var or []string
		for _, s := range f.States {
			w, a := botRunStateWhere(s)
			or, args = append(or, w), append(args, a...)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	q := `SELECT ` + botRunCols + botRunFrom
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	q += ` ORDER BY r.seq DESC LIMIT ?`
	args = append(args, limit)
	rows, err := b.s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	var out []research.Run
	for rows.Next() {
		r, _, err := scanBotRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	return out, nil
}

// AcquireRun implements research.Store: ClaimKey.
func (b *Runs) AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		_, err := claimJobKey(ctx, tx, jobs.KindRun, id, owner, now, lease, 0)
		switch {
		case errors.Is(err, jobs.ErrNotClaimable):
			return fmt.Errorf("run %s: %w: %w", id, research.ErrNotAcquired, err)
		case err != nil:
			return jobmap.ResearchErr(err)
		}
		r, err = getBotRun(ctx, tx, id)
		return err
	})
	if err != nil {
		return research.Run{}, err
	}
	return r, nil
}

// AcquireRuns implements research.Store: Claim, oldest first, of the
// kind's keys.
func (b *Runs) AcquireRuns(ctx context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	var out []research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		got, err := claimJobsOf(ctx, tx, jobs.KindRun, &kind, owner, now, lease, limit, 0)
		if err != nil {
			return fmt.Errorf("acquire runs: %w", err)
		}
		for _, j := range got {
			r, err := getBotRun(ctx, tx, j.Key)
			if err != nil {
				return fmt.Errorf("acquire runs: %w", err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Heartbeat implements research.Store: Extend.
func (b *Runs) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := extendJob(ctx, tx, jobs.KindRun, id, owner, now, lease); err != nil {
			return jobmap.ResearchErr(err)
		}
		var err error
		r, err = getBotRun(ctx, tx, id)
		return err
	})
	if err != nil {
		return research.Run{}, err
	}
	return r, nil
}

// ReleaseRun implements research.Store: Release (a clean hand-back gives
// its pickup back).
func (b *Runs) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		_, err := releaseJob(ctx, tx, jobs.KindRun, id, owner, now)
		return jobmap.ResearchErr(err)
	})
}

// WaitRun implements research.Store: Park, and the interrupt recorded with
// the decision cleared.
func (b *Runs) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	return b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := parkJob(ctx, tx, jobs.KindRun, id, owner, nil, now); err != nil {
			return jobmap.ResearchErr(err)
		}
		r, err := getBotRun(ctx, tx, id)
		if err != nil {
			return err
		}
		r.Interrupt, r.Decision = &intr, nil
		detail, err := jobmap.RunDetail(r)
		if err != nil {
			return fmt.Errorf("sqlite: wait run: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE bot_runs SET intr_id = ?, dec_interrupt_id = NULL, detail = ? WHERE id = ?`,
			intr.ID, string(detail), id); err != nil {
			return fmt.Errorf("sqlite: wait run %s: %w", id, err)
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
	return b.s.write(ctx, func(tx *sql.Tx) error {
		_, err := finishJob(ctx, tx, jobs.KindRun, id, owner, js, errText, payload, now)
		return jobmap.ResearchErr(err)
	})
}

// SetStatusMessage implements research.Store.
func (b *Runs) SetStatusMessage(ctx context.Context, id, ts string) (string, error) {
	var out string
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE bot_runs SET status_ts = CASE WHEN status_ts = '' THEN ?1 ELSE status_ts END
			WHERE id = ?2 RETURNING status_ts`, ts, id).Scan(&out)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("run %s: %w", id, research.ErrNotFound)
		case err != nil:
			return fmt.Errorf("sqlite: set status message: %w", err)
		}
		return nil
	})
	return out, err
}

// Decide implements research.Store: the checks of jobmap.DecideRefusal on
// the run as stored, then Cancel (a cancel) or Unpark of its job and the
// decision recorded, in one immediate transaction.
func (b *Runs) Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	cancel := d.Action == research.ActionCancel
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if r, err = getBotRun(ctx, tx, runID); err != nil {
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
			return fmt.Errorf("decide run %s: %w", runID, err)
		}
		next := r
		next.Decision = &d
		detail, err := jobmap.RunDetail(next)
		if err != nil {
			return fmt.Errorf("sqlite: decide: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE bot_runs SET dec_interrupt_id = ?2, detail = ?3, updated_at = ?4,
				cancel_requested_by = CASE WHEN ?5 THEN ?6 ELSE cancel_requested_by END
			WHERE id = ?1`, runID, d.InterruptID, string(detail), nanos(d.At), cancel, d.By); err != nil {
			return fmt.Errorf("sqlite: decide run %s: %w", runID, err)
		}
		r, err = getBotRun(ctx, tx, runID)
		return err
	})
	return r, err
}

// RequestCancel implements research.Store: a queued or waiting run's job is
// failed as cancelled (Cancel); a running run gets CancelRequestedBy (its
// owner sees it in Heartbeat); a finished run gets ErrFinished.
func (b *Runs) RequestCancel(ctx context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	var r research.Run
	var cancelled bool
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		cur, err := getBotRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		switch cur.State {
		case research.StateQueued, research.StateWaiting:
			cancelled = true
			if err := cancelJob(ctx, tx, jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), now); err != nil {
				return fmt.Errorf("cancel run %s: %w", runID, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE bot_runs SET cancel_requested_by = ?2, updated_at = ?3 WHERE id = ?1`,
				runID, by, nanos(now)); err != nil {
				return fmt.Errorf("sqlite: cancel run %s: %w", runID, err)
			}
		case research.StateRunning:
			if _, err := tx.ExecContext(ctx, `UPDATE bot_runs SET
					updated_at = CASE WHEN cancel_requested_by = '' THEN ?3 ELSE updated_at END,
					cancel_requested_by = CASE WHEN cancel_requested_by = '' THEN ?2 ELSE cancel_requested_by END
				WHERE id = ?1`, runID, by, nanos(now)); err != nil {
				return fmt.Errorf("sqlite: cancel run %s: %w", runID, err)
			}
		default:
			r = cur
			return fmt.Errorf("run %s is %s: %w", runID, cur.State, research.ErrFinished)
		}
		r, err = getBotRun(ctx, tx, runID)
		return err
	})
	if err != nil && !errors.Is(err, research.ErrFinished) {
		return research.Run{}, false, err
	}
	return r, cancelled, err
}

// RecordUpload implements research.Store.
func (b *Runs) RecordUpload(ctx context.Context, u research.Upload) (bool, error) {
	var n int64
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO bot_uploads (run_id, file_id, message_ts, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			u.RunID, u.FileID, u.MessageTS, nanos(u.At))
		if err != nil {
			return fmt.Errorf("sqlite: record upload: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// Upload implements research.Store.
func (b *Runs) Upload(ctx context.Context, runID string) (research.Upload, error) {
	u := research.Upload{RunID: runID}
	var at int64
	err := b.s.r.QueryRowContext(ctx, `SELECT file_id, message_ts, at FROM bot_uploads WHERE run_id = ?`, runID).Scan(&u.FileID, &u.MessageTS, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Upload{}, fmt.Errorf("upload of %s: %w", runID, research.ErrNotFound)
	case err != nil:
		return research.Upload{}, fmt.Errorf("sqlite: upload: %w", err)
	}
	u.At = fromNanos(at)
	return u, nil
}

// StageUpload implements research.Store.
func (b *Runs) StageUpload(ctx context.Context, runID, fileID string, at time.Time) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO bot_staged_files (run_id, file_id, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			runID, fileID, nanos(at)); err != nil {
			return fmt.Errorf("sqlite: stage upload: %w", err)
		}
		return nil
	})
}

// StagedUploads implements research.Store.
func (b *Runs) StagedUploads(ctx context.Context, runID string) ([]string, error) {
	rows, err := b.s.r.QueryContext(ctx, `SELECT file_id FROM bot_staged_files WHERE run_id = ? ORDER BY at, file_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: staged uploads: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: staged uploads: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: staged uploads: %w", err)
	}
	return out, nil
}

// UnstageUpload implements research.Store.
func (b *Runs) UnstageUpload(ctx context.Context, runID, fileID string) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM bot_staged_files WHERE run_id = ? AND file_id = ?`, runID, fileID); err != nil {
			return fmt.Errorf("sqlite: unstage upload: %w", err)
		}
		return nil
	})
}
