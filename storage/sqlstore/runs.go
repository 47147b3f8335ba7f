package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Runs is research.Store on a DB (tables bot_runs, bot_uploads,
// bot_staged_files and jobs). A run is a row of bot_runs (the columns that conditions read, and the rest as one JSON
// text, detail: jobmap.RunDetail) and a KindRun job (migration 0010) that
// holds its lease and state (jobmap.RunJob), read with a JOIN; its place in
// Slack is the bot's (Slack, slack.go). The lease rules are jobs.go's,
// run inside this file's transactions. On PostgreSQL, CreateRun serialises
// on advisory locks on the requester and the thread before it checks the
// jobs of their runs and inserts, and Decide, WaitRun and RequestCancel
// lock the run's row before they read its state; on SQLite the single
// writer does both. Times are stored as Unix nanoseconds (0: zero time) and
// read back in UTC.
type Runs struct{ db *DB }

var _ research.Store = (*Runs)(nil)

// NewRuns returns the research.Store on db.
func NewRuns(db *DB) *Runs { return &Runs{db} }

// Advisory lock classes of CreateRun (key 2 is hashtext of the value).
const (
	lockBotUser   int32 = 0x64726275 // "drbu": requester
	lockBotThread int32 = 0x64726274 // "drbt": graph thread id
)

// botRunCols are the columns scanBotRun reads: the run's row r and its job
// j (botRunFrom), seq first.
const botRunCols = `r.seq, r.id, r.thread_id, r.requester,
	r.intr_id, r.dec_interrupt_id, r.cancel_requested_by, r.created_at, r.updated_at, r.detail,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.updated_at, j.finished_at, j.error`

// botRunFrom joins a run's row to its job, which holds its lease and state.
const botRunFrom = ` FROM bot_runs r JOIN jobs j ON j.kind = 'run' AND j.key = r.id`

// activeFrom reads the active runs (queued, running, waiting) from their
// jobs, which the partial index jobs_active_runs (migration 0012) holds,
// each joined to its row: CreateRun's checks cost the number of active
// runs, not the history of the thread or the requester. SQLite's planner,
// without statistics, would start from the requester's runs: INDEXED BY and
// CROSS JOIN (which keeps the left table outside) say where to start.
func (db *DB) activeFrom() string {
	return db.pick(` FROM jobs j INDEXED BY jobs_active_runs CROSS JOIN bot_runs r ON r.id = j.key`,
		` FROM jobs j JOIN bot_runs r ON r.id = j.key`) +
		` WHERE j.kind = 'run' AND j.state IN ('ready', 'held', 'parked')`
}

// scanBotRun reads one row of botRunCols.
func scanBotRun(sc Row) (research.Run, error) {
	var (
		r                           research.Run
		j                           jobs.Job
		seq                         int64
		state                       string
		created, updated            int64
		lease, jobUpdated, finished int64
		intrID, decID               *string
		detail                      []byte
	)
	if err := sc.Scan(&seq, &r.ID, &r.ThreadID, &r.Requester,
		&intrID, &decID, &r.CancelRequestedBy, &created, &updated, &detail,
		&state, &j.Payload, &j.Owner, &lease, &j.Attempts, &jobUpdated, &finished, &j.Error); err != nil {
		return research.Run{}, err
	}
	if err := jobmap.ReadRunDetail(&r, detail, intrID, decID); err != nil {
		return research.Run{}, err
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	j.State, j.LeaseUntil, j.UpdatedAt, j.FinishedAt = jobs.State(state), fromNanos(lease), fromNanos(jobUpdated), fromNanos(finished)
	jobmap.RunLease(&r, j)
	return r, nil
}

// queryBotRun reads one run with query (which selects botRunCols);
// ErrNotFound if none.
func (db *DB) queryBotRun(ctx context.Context, q Querier, what, query string, args ...any) (research.Run, error) {
	r, err := scanBotRun(q.QueryRow(ctx, query, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Run{}, fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return research.Run{}, db.errorf("%s: %w", what, err)
	}
	return r, nil
}

// getBotRun reads a run; with lock, its row is locked on PostgreSQL until
// the transaction ends.
func (db *DB) getBotRun(ctx context.Context, q Querier, id string, lock bool) (research.Run, error) {
	query := `SELECT ` + botRunCols + botRunFrom + ` WHERE r.id = $1`
	if lock {
		query += db.pick("", " FOR NO KEY UPDATE OF r")
	}
	return db.queryBotRun(ctx, q, "run "+id, query, id)
}

// scanBotRuns reads rows of botRunCols.
func (db *DB) scanBotRuns(rows Rows, err error, what string) ([]research.Run, error) {
	out, err := collect(rows, err, scanBotRun)
	if err != nil {
		return nil, db.errorf("%s: %w", what, err)
	}
	return out, nil
}

// CreateRun implements research.Store: the checks (id, busy thread,
// per-user limit, in that order) read the jobs of the thread's and the
// requester's runs, and the row and a ready job are inserted, in one
// transaction (on PostgreSQL under the advisory locks).
func (b *Runs) CreateRun(ctx context.Context, r research.Run, maxPerUser int) error {
	return b.db.createRun(ctx, r, maxPerUser, nil)
}

// createRun is CreateRun, with also (when not nil) run in its transaction
// after the run's insert: Slack.CreateRun inserts the run's place there.
func (db *DB) createRun(ctx context.Context, r research.Run, maxPerUser int, also func(Querier) error) error {
	r = dbtext.Run(r)
	detail, err := jobmap.RunDetail(r)
	if err != nil {
		return db.errorf("create run: %w", err)
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
	err = db.Tx(ctx, func(q Querier) error {
		// Requester first, then thread: every CreateRun takes them in this
		// order, so they cannot deadlock. Each statement after the locks
		// reads a snapshot taken once it holds them.
		if err := db.lock(ctx, q, lockBotUser, r.Requester); err != nil {
			return fmt.Errorf("create run: %w", err)
		}
		if err := db.lock(ctx, q, lockBotThread, r.ThreadID); err != nil {
			return fmt.Errorf("create run: %w", err)
		}
		if err := db.createRunChecks(ctx, q, r, maxPerUser); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `INSERT INTO bot_runs (
				id, thread_id, requester, intr_id, dec_interrupt_id,
				cancel_requested_by, created_at, updated_at, detail)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.ID, r.ThreadID, r.Requester, intrID, decID,
			r.CancelRequestedBy, nanos(r.CreatedAt), nanos(r.UpdatedAt), string(detail)); err != nil {
			return db.errorf("create run %s: %w", r.ID, err)
		}
		stored, err := db.putJobs(ctx, q, []jobs.Job{jobmap.RunJob(r)})
		if err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		if !stored[0] {
			return db.errorf("create run %s: its job exists already", r.ID)
		}
		if also != nil {
			return also(q)
		}
		return nil
	})
	// The primary key backs the id check (it cannot fire while every
	// writer takes the locks, but says the same if it does).
	if err != nil && isUniqueViolation(err) {
		return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
	}
	return err
}

// createRunChecks refuses r when its id exists, its thread is busy or its
// requester has maxPerUser active runs.
func (db *DB) createRunChecks(ctx context.Context, q Querier, r research.Run, maxPerUser int) error {
	var exists, busy bool
	var perUser int
	if err := q.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM bot_runs WHERE id = $1),
			EXISTS (SELECT 1`+db.activeFrom()+` AND r.thread_id = $2),
			(SELECT count(*)`+db.activeFrom()+` AND r.requester = $3)`,
		r.ID, r.ThreadID, r.Requester).Scan(&exists, &busy, &perUser); err != nil {
		return db.errorf("create run: %w", err)
	}
	switch {
	case exists:
		return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
	case busy:
		return fmt.Errorf("thread %s: %w", r.ThreadID, research.ErrThreadBusy)
	case maxPerUser > 0 && perUser >= maxPerUser:
		return fmt.Errorf("user %s has %d: %w", r.Requester, perUser, research.ErrUserLimit)
	}
	return nil
}

// Run implements research.Store.
func (b *Runs) Run(ctx context.Context, id string) (research.Run, error) {
	return b.db.getBotRun(ctx, b.db.Read(), id, false)
}

// LatestRun implements research.Store.
func (b *Runs) LatestRun(ctx context.Context, threadID string) (research.Run, error) {
	return b.db.queryBotRun(ctx, b.db.Read(), "latest run of "+threadID,
		`SELECT `+botRunCols+botRunFrom+` WHERE r.thread_id = $1 ORDER BY r.seq DESC LIMIT 1`, threadID)
}

// ListRuns implements research.Store.
func (b *Runs) ListRuns(ctx context.Context, f research.RunFilter) ([]research.Run, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Requester != "" {
		where = append(where, "r.requester = "+arg(f.Requester))
	}
	if len(f.States) > 0 {
		var or []string
		for _, st := range f.States {
			js, p := jobmap.RunJobStates(st)
			w := "j.state = " + arg(string(js))
			switch {
			case p == nil:
			case len(p) == 0:
				w += " AND j.payload <> " + arg([]byte(jobmap.RunCancelled))
			default:
				w += " AND j.payload = " + arg(p)
			}
			or = append(or, "("+w+")")
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	q := `SELECT ` + botRunCols + botRunFrom
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY r.seq DESC LIMIT ` + arg(b.db.limit(f.Limit))
	rows, err := b.db.Read().Query(ctx, q, args...)
	return b.db.scanBotRuns(rows, err, "list runs")
}

// AcquireRun implements research.Store: ClaimKey, then the run read.
func (b *Runs) AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	return writeValue(ctx, b.db, func(q Querier) (research.Run, error) {
		_, err := b.db.claimJobKey(ctx, q, jobs.KindRun, id, owner, now, lease, 0)
		switch {
		case errors.Is(err, jobs.ErrNotClaimable):
			return research.Run{}, fmt.Errorf("run %s: %w: %w", id, research.ErrNotAcquired, err)
		case err != nil:
			return research.Run{}, jobmap.ResearchErr(err)
		}
		return b.db.getBotRun(ctx, q, id, false)
	})
}

// AcquireRuns implements research.Store: Claim of the kind's keys, oldest
// first, then the claimed runs read in one query.
func (b *Runs) AcquireRuns(ctx context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	return writeValue(ctx, b.db, func(q Querier) ([]research.Run, error) {
		got, err := b.db.claimJobsOf(ctx, q, jobs.KindRun, &kind, owner, now, lease, limit, 0)
		if err != nil {
			return nil, fmt.Errorf("acquire runs: %w", err)
		}
		return b.db.runsOf(ctx, q, got)
	})
}

// runsOf reads the runs of jobs got, in got's order.
func (db *DB) runsOf(ctx context.Context, q Querier, got []jobs.Job) ([]research.Run, error) {
	if len(got) == 0 {
		return nil, nil
	}
	ids := make([]string, len(got))
	for i, j := range got {
		ids[i] = j.Key
	}
	list, err := db.list(ids)
	if err != nil {
		return nil, db.errorf("acquire runs: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT `+botRunCols+botRunFrom+` WHERE `+db.inList("r.id", "$1"), list)
	runs, err := db.scanBotRuns(rows, err, "acquire runs")
	if err != nil {
		return nil, err
	}
	byID := make(map[string]research.Run, len(runs))
	for _, r := range runs {
		byID[r.ID] = r
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
	return writeValue(ctx, b.db, func(q Querier) (research.Run, error) {
		if _, err := b.db.extendJob(ctx, q, jobs.KindRun, id, owner, now, lease); err != nil {
			return research.Run{}, jobmap.ResearchErr(err)
		}
		return b.db.getBotRun(ctx, q, id, false)
	})
}

// ReleaseRun implements research.Store: Release (a clean hand-back gives
// its pickup back).
func (b *Runs) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	return b.db.Write(ctx, func(q Querier) error {
		_, err := b.db.releaseJob(ctx, q, jobs.KindRun, id, owner, now)
		return jobmap.ResearchErr(err)
	})
}

// WaitRun implements research.Store: Park, and the interrupt recorded with
// the decision cleared, in one transaction.
func (b *Runs) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	return b.db.Tx(ctx, func(q Querier) error {
		if _, err := b.db.parkJob(ctx, q, jobs.KindRun, id, owner, nil, now); err != nil {
			return jobmap.ResearchErr(err)
		}
		r, err := b.db.getBotRun(ctx, q, id, true)
		if err != nil {
			return err
		}
		r.Interrupt, r.Decision = &intr, nil
		detail, err := jobmap.RunDetail(r)
		if err != nil {
			return b.db.errorf("wait run: %w", err)
		}
		if _, err := q.Exec(ctx, `UPDATE bot_runs SET intr_id = $2, dec_interrupt_id = NULL, detail = $3 WHERE id = $1`,
			id, intr.ID, string(detail)); err != nil {
			return b.db.errorf("wait run %s: %w", id, err)
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
	return b.db.Write(ctx, func(q Querier) error {
		_, err := b.db.finishJob(ctx, q, jobs.KindRun, id, owner, js, errText, payload, now)
		return jobmap.ResearchErr(err)
	})
}

// Decide implements research.Store: with the run's row locked, the checks
// of jobmap.DecideRefusal on the run as stored, then Cancel (a cancel) or
// Unpark (a compare-and-set) of its job and the decision recorded, in one
// transaction.
func (b *Runs) Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	db := b.db
	d.Text = dbtext.String(d.Text)
	cancel := d.Action == research.ActionCancel
	var r research.Run
	err := db.Tx(ctx, func(q Querier) error {
		var err error
		if r, err = db.getBotRun(ctx, q, runID, true); err != nil {
			return err
		}
		if err := jobmap.DecideRefusal(r, d); err != nil {
			return err
		}
		if cancel {
			err = db.cancelJob(ctx, q, jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), d.At)
		} else {
			_, err = db.unparkJob(ctx, q, jobs.KindRun, runID, nil, d.At)
		}
		if err != nil {
			return fmt.Errorf("decide run %s: %w: %w", runID, research.ErrNotWaiting, err)
		}
		next := r
		next.Decision = &d
		detail, err := jobmap.RunDetail(next)
		if err != nil {
			return db.errorf("decide: %w", err)
		}
		if _, err := q.Exec(ctx, `UPDATE bot_runs SET dec_interrupt_id = $2, detail = $3, updated_at = $4,
				cancel_requested_by = CASE WHEN $5 THEN $6 ELSE cancel_requested_by END
			WHERE id = $1`, runID, d.InterruptID, string(detail), nanos(d.At), cancel, d.By); err != nil {
			return db.errorf("decide run %s: %w", runID, err)
		}
		r, err = db.getBotRun(ctx, q, runID, false)
		return err
	})
	return r, err
}

// RequestCancel implements research.Store: one transaction holding the
// run's row lock from the read to the change. A queued or waiting run's job
// is failed as cancelled (Cancel); one acquired meanwhile (acquiring does
// not take the row lock, on PostgreSQL) is handled as running: it gets
// CancelRequestedBy, which its owner sees in Heartbeat; a finished run gets
// ErrFinished.
func (b *Runs) RequestCancel(ctx context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	var r research.Run
	var cancelled bool
	err := b.db.Tx(ctx, func(q Querier) error {
		var err error
		r, cancelled, err = b.db.requestCancel(ctx, q, runID, by, now)
		return err
	})
	if err != nil && !errors.Is(err, research.ErrFinished) {
		return research.Run{}, false, err
	}
	return r, cancelled, err
}

// requestCancel is RequestCancel in q's transaction.
func (db *DB) requestCancel(ctx context.Context, q Querier, runID, by string, now time.Time) (research.Run, bool, error) {
	cur, err := db.getBotRun(ctx, q, runID, true)
	if err != nil {
		return research.Run{}, false, err
	}
	cancelled := false
	if cur.State == research.StateQueued || cur.State == research.StateWaiting {
		err := db.cancelJob(ctx, q, jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), now)
		switch {
		case err == nil:
			cancelled = true
		case !errors.Is(err, jobs.ErrNotClaimable):
			return research.Run{}, false, fmt.Errorf("cancel run %s: %w", runID, err)
		default:
			if cur, err = db.getBotRun(ctx, q, runID, false); err != nil {
				return research.Run{}, false, err
			}
		}
	}
	switch {
	case cancelled:
	case cur.State != research.StateRunning:
		return cur, false, fmt.Errorf("run %s is %s: %w", runID, cur.State, research.ErrFinished)
	case cur.CancelRequestedBy != "":
		return cur, false, nil
	}
	if _, err := q.Exec(ctx, `UPDATE bot_runs SET cancel_requested_by = $2, updated_at = $3 WHERE id = $1`,
		runID, by, nanos(now)); err != nil {
		return research.Run{}, false, db.errorf("cancel run %s: %w", runID, err)
	}
	r, err := db.getBotRun(ctx, q, runID, false)
	return r, cancelled, err
}

// RecordUpload implements research.Store.
func (b *Runs) RecordUpload(ctx context.Context, u research.Upload) (bool, error) {
	n, err := writeValue(ctx, b.db, func(q Querier) (int64, error) {
		return q.Exec(ctx, `INSERT INTO bot_uploads (run_id, file_id, message_id, at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			u.RunID, u.FileID, u.MessageID, nanos(u.At))
	})
	if err != nil {
		return false, b.db.errorf("record upload: %w", err)
	}
	return n == 1, nil
}

// Upload implements research.Store.
func (b *Runs) Upload(ctx context.Context, runID string) (research.Upload, error) {
	u := research.Upload{RunID: runID}
	var at int64
	err := b.db.Read().QueryRow(ctx, `SELECT file_id, message_id, at FROM bot_uploads WHERE run_id = $1`, runID).Scan(&u.FileID, &u.MessageID, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Upload{}, fmt.Errorf("upload of %s: %w", runID, research.ErrNotFound)
	case err != nil:
		return research.Upload{}, b.db.errorf("upload: %w", err)
	}
	u.At = fromNanos(at)
	return u, nil
}

// StageUpload implements research.Store.
func (b *Runs) StageUpload(ctx context.Context, runID, fileID string, at time.Time) error {
	return b.db.Write(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO bot_staged_files (run_id, file_id, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			runID, fileID, nanos(at)); err != nil {
			return b.db.errorf("stage upload: %w", err)
		}
		return nil
	})
}

// StagedUploads implements research.Store.
func (b *Runs) StagedUploads(ctx context.Context, runID string) ([]string, error) {
	rows, err := b.db.Read().Query(ctx, `SELECT file_id FROM bot_staged_files WHERE run_id = $1 ORDER BY at, file_id`, runID)
	out, err := collect(rows, err, scanString)
	if err != nil {
		return nil, b.db.errorf("staged uploads: %w", err)
	}
	return out, nil
}

// UnstageUpload implements research.Store.
func (b *Runs) UnstageUpload(ctx context.Context, runID, fileID string) error {
	return b.db.Write(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM bot_staged_files WHERE run_id = $1 AND file_id = $2`, runID, fileID); err != nil {
			return b.db.errorf("unstage upload: %w", err)
		}
		return nil
	})
}

// HeldRuns implements research.Store.
func (b *Runs) HeldRuns(ctx context.Context, owner string, now time.Time) (mine, all int, err error) {
	if err := b.db.Read().QueryRow(ctx, `SELECT count(CASE WHEN owner = $1 THEN 1 END), count(*) FROM jobs
		WHERE kind = 'run' AND state = 'held' AND lease_until >= $2`, owner, nanos(now)).Scan(&mine, &all); err != nil {
		return 0, 0, b.db.errorf("held runs: %w", err)
	}
	return mine, all, nil
}
