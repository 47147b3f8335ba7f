package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Runs is research.Store on the Store's database (tables bot_*, migrations
// 0002, 0005 and 0006). Every write is one BEGIN IMMEDIATE transaction on
// the writer connection, so writers serialise on SQLite's lock across
// connections and processes: the checks and the change of each method are
// one atomic step. Reads use the reader pool. Times are stored as Unix
// nanoseconds (0: zero time) and read back in UTC.
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

const botActiveStates = `('queued', 'running', 'waiting')`

// botRunCols are the columns scanBotRun reads, seq first.
const botRunCols = `seq, id, thread_id, team, channel, thread_ts, requester, question, follow_up, options,
	state, owner, lease_until, attempt, status_ts,
	intr_id, intr_kind, intr_text, intr_message_ts,
	dec_interrupt_id, dec_action, dec_text, dec_by, dec_at,
	cancel_requested_by, error, created_at, updated_at, finished_at`

type botScanner interface{ Scan(dest ...any) error }

// scanBotRun reads one row of botRunCols and returns the run and its seq.
func scanBotRun(sc botScanner) (research.Run, int64, error) {
	var (
		r                           research.Run
		seq                         int64
		options, state              string
		leaseUntil, decAt           int64
		created, updated, finished  int64
		intrID, decID               sql.NullString
		intrKind, intrText, intrMsg string
		decAction, decText, decBy   string
	)
	if err := sc.Scan(&seq, &r.ID, &r.ThreadID, &r.Key.Team, &r.Key.Channel, &r.Key.ThreadTS, &r.Requester, &r.Question,
		&r.FollowUp, &options, &state, &r.Owner, &leaseUntil, &r.Attempt, &r.StatusTS,
		&intrID, &intrKind, &intrText, &intrMsg,
		&decID, &decAction, &decText, &decBy, &decAt,
		&r.CancelRequestedBy, &r.Error, &created, &updated, &finished); err != nil {
		return research.Run{}, 0, err
	}
	if err := json.Unmarshal([]byte(options), &r.Options); err != nil {
		return research.Run{}, 0, fmt.Errorf("run %s: options: %w", r.ID, err)
	}
	r.State = research.RunState(state)
	r.LeaseUntil = fromNanos(leaseUntil)
	if intrID.Valid {
		r.Interrupt = &research.PendingInterrupt{ID: intrID.String, Kind: research.InterruptKind(intrKind), Text: intrText, MessageTS: intrMsg}
	}
	if decID.Valid {
		r.Decision = &research.Decision{InterruptID: decID.String, Action: research.Action(decAction), Text: decText, By: decBy, At: fromNanos(decAt)}
	}
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = fromNanos(created), fromNanos(updated), fromNanos(finished)
	return r, seq, nil
}

// queryBotRun reads one run with q (which selects botRunCols); ErrNotFound if none.
func queryBotRun(ctx context.Context, tx *sql.Tx, what, q string, args ...any) (research.Run, error) {
	r, _, err := scanBotRun(tx.QueryRowContext(ctx, q, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.Run{}, fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return research.Run{}, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return r, nil
}

func getBotRun(ctx context.Context, tx *sql.Tx, id string) (research.Run, error) {
	return queryBotRun(ctx, tx, "run "+id, `SELECT `+botRunCols+` FROM bot_runs WHERE id = ?`, id)
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

// CreateRun implements research.Store.
func (b *Runs) CreateRun(ctx context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	opts, err := json.Marshal(r.Options)
	if err != nil {
		return fmt.Errorf("sqlite: run %s options: %w", r.ID, err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	var intrID, decID sql.NullString
	var intr research.PendingInterrupt
	var dec research.Decision
	if r.Interrupt != nil {
		intr, intrID = *r.Interrupt, sql.NullString{String: r.Interrupt.ID, Valid: true}
	}
	if r.Decision != nil {
		dec, decID = *r.Decision, sql.NullString{String: r.Decision.InterruptID, Valid: true}
	}
	return b.s.write(ctx, func(tx *sql.Tx) error {
		var exists, busy bool
		var perUser int
		if err := tx.QueryRowContext(ctx, `SELECT
				EXISTS (SELECT 1 FROM bot_runs WHERE id = ?1),
				EXISTS (SELECT 1 FROM bot_runs WHERE thread_id = ?2 AND state IN `+botActiveStates+`),
				(SELECT count(*) FROM bot_runs WHERE requester = ?3 AND state IN `+botActiveStates+`)`,
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
				id, thread_id, team, channel, thread_ts, requester, question, follow_up, options,
				state, owner, lease_until, attempt, status_ts,
				intr_id, intr_kind, intr_text, intr_message_ts,
				dec_interrupt_id, dec_action, dec_text, dec_by, dec_at,
				cancel_requested_by, error, created_at, updated_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', '', 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.ThreadID, r.Key.Team, r.Key.Channel, r.Key.ThreadTS, r.Requester, r.Question, r.FollowUp, string(opts),
			r.StatusTS, intrID, string(intr.Kind), intr.Text, intr.MessageTS,
			decID, string(dec.Action), dec.Text, dec.By, nanos(dec.At),
			r.CancelRequestedBy, r.Error, nanos(r.CreatedAt), nanos(r.UpdatedAt), nanos(r.FinishedAt)); err != nil {
			return fmt.Errorf("sqlite: create run %s: %w", r.ID, err)
		}
		return nil
	})
}

// Run implements research.Store.
func (b *Runs) Run(ctx context.Context, id string) (research.Run, error) {
	var r research.Run
	err := b.s.read(ctx, func(tx *sql.Tx) (err error) {
		r, err = getBotRun(ctx, tx, id)
		return err
	})
	return r, err
}

// LatestRun implements research.Store.
func (b *Runs) LatestRun(ctx context.Context, threadID string) (research.Run, error) {
	var r research.Run
	err := b.s.read(ctx, func(tx *sql.Tx) (err error) {
		r, err = queryBotRun(ctx, tx, "latest run of "+threadID,
			`SELECT `+botRunCols+` FROM bot_runs WHERE thread_id = ? ORDER BY seq DESC LIMIT 1`, threadID)
		return err
	})
	return r, err
}

// ListRuns implements research.Store.
func (b *Runs) ListRuns(ctx context.Context, f research.RunFilter) ([]research.Run, error) {
	var where []string
	var args []any
	if f.Requester != "" {
		where, args = append(where, "requester = ?"), append(args, f.Requester)
	}
	if f.Channel != "" {
		where, args = append(where, "channel = ?"), append(args, f.Channel)
	}
	if len(f.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(", ?", len(f.States)-1)+")")
		for _, s := range f.States {
			args = append(args, string(s))
		}
	}
	q := `SELECT ` + botRunCols + ` FROM bot_runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	q += ` ORDER BY seq DESC LIMIT ?`
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

// botAcquireSet is the change AcquireRun(s) make: ?1 owner, ?2 now, ?3 lease end.
const botAcquireSet = `UPDATE bot_runs SET state = 'running', owner = ?1, lease_until = ?3, attempt = attempt + 1, updated_at = ?2`

// botAcquirable selects runs that may be acquired at ?2.
const botAcquirable = `(state = 'queued' OR (state = 'running' AND lease_until < ?2))`

// AcquireRun implements research.Store.
func (b *Runs) AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = queryBotRun(ctx, tx, "acquire run "+id, botAcquireSet+` WHERE id = ?4 AND `+botAcquirable+` RETURNING `+botRunCols,
			owner, nanos(now), nanos(now.Add(lease)), id)
		if !errors.Is(err, research.ErrNotFound) {
			return err
		}
		cur, err := getBotRun(ctx, tx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("run %s (%s by %q): %w", id, cur.State, cur.Owner, research.ErrNotAcquired)
	})
	if err != nil {
		return research.Run{}, err
	}
	return r, nil
}

// AcquireRuns implements research.Store.
func (b *Runs) AcquireRuns(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	if limit <= 0 {
		limit = -1
	}
	type seqRun struct {
		seq int64
		run research.Run
	}
	var got []seqRun
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		got = got[:0]
		rows, err := tx.QueryContext(ctx, botAcquireSet+` WHERE seq IN (
				SELECT seq FROM bot_runs WHERE `+botAcquirable+` ORDER BY seq LIMIT ?4
			) RETURNING `+botRunCols, owner, nanos(now), nanos(now.Add(lease)), limit)
		if err != nil {
			return fmt.Errorf("sqlite: acquire runs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, seq, err := scanBotRun(rows)
			if err != nil {
				return fmt.Errorf("sqlite: acquire runs: %w", err)
			}
			got = append(got, seqRun{seq, r})
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: acquire runs: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	out := make([]research.Run, len(got))
	for i, g := range got {
		out[i] = g.run
	}
	return out, nil
}

// held runs the fenced update q (whose WHERE ends with "id = ? AND state =
// 'running' AND owner = ?" as its last two parameters, and which returns
// botRunCols) and maps "no row" to ErrNotFound or ErrLeaseLost.
func (b *Runs) held(ctx context.Context, what, id, owner, q string, args ...any) (research.Run, error) {
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = queryBotRun(ctx, tx, what, q, append(args, id, owner)...)
		if !errors.Is(err, research.ErrNotFound) {
			return err
		}
		cur, err := getBotRun(ctx, tx, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("%s (%s by %q): %w", what, cur.State, cur.Owner, research.ErrLeaseLost)
	})
	return r, err
}

const botHeldWhere = ` WHERE id = ? AND state = 'running' AND owner = ? RETURNING ` + botRunCols

// Heartbeat implements research.Store.
func (b *Runs) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	r, err := b.held(ctx, "heartbeat run "+id, id, owner,
		`UPDATE bot_runs SET lease_until = ?, updated_at = ?`+botHeldWhere, nanos(now.Add(lease)), nanos(now))
	if err != nil {
		return research.Run{}, err
	}
	return r, nil
}

// ReleaseRun implements research.Store.
func (b *Runs) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	_, err := b.held(ctx, "release run "+id, id, owner,
		`UPDATE bot_runs SET state = 'queued', owner = '', lease_until = 0, attempt = CASE WHEN attempt > 1 THEN attempt - 1 ELSE attempt END, updated_at = ?`+botHeldWhere, nanos(now))
	return err
}

// WaitRun implements research.Store.
func (b *Runs) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	_, err := b.held(ctx, "wait run "+id, id, owner,
		`UPDATE bot_runs SET state = 'waiting', owner = '', lease_until = 0, updated_at = ?,
			intr_id = ?, intr_kind = ?, intr_text = ?, intr_message_ts = ?,
			dec_interrupt_id = NULL, dec_action = '', dec_text = '', dec_by = '', dec_at = 0`+botHeldWhere,
		nanos(now), intr.ID, string(intr.Kind), intr.Text, intr.MessageTS)
	return err
}

// FinishRun implements research.Store.
func (b *Runs) FinishRun(ctx context.Context, id, owner string, state research.RunState, errText string, now time.Time) error {
	errText = dbtext.String(errText)
	switch state {
	case research.StateDone, research.StateFailed, research.StateCancelled:
	default:
		return fmt.Errorf("finish run %s: %q is not a final state", id, state)
	}
	_, err := b.held(ctx, "finish run "+id, id, owner,
		`UPDATE bot_runs SET state = ?, owner = '', lease_until = 0, error = ?, updated_at = ?, finished_at = ?`+botHeldWhere,
		string(state), errText, nanos(now), nanos(now))
	return err
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

// Decide implements research.Store.
func (b *Runs) Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	var r research.Run
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = queryBotRun(ctx, tx, "decide run "+runID, `UPDATE bot_runs SET
				dec_interrupt_id = ?2, dec_action = ?3, dec_text = ?4, dec_by = ?5, dec_at = ?6, updated_at = ?6,
				state = CASE WHEN ?7 THEN 'cancelled' ELSE 'queued' END,
				finished_at = CASE WHEN ?7 THEN ?6 ELSE finished_at END,
				cancel_requested_by = CASE WHEN ?7 THEN ?5 ELSE cancel_requested_by END,
				attempt = CASE WHEN ?7 THEN attempt ELSE 0 END
			WHERE id = ?1 AND state = 'waiting' AND intr_id = ?2 AND dec_interrupt_id IS NULL
			RETURNING `+botRunCols,
			runID, d.InterruptID, string(d.Action), d.Text, d.By, nanos(d.At), d.Action == research.ActionCancel)
		if !errors.Is(err, research.ErrNotFound) {
			return err
		}
		if r, err = getBotRun(ctx, tx, runID); err != nil {
			return err
		}
		return botDecideRefusal(r, d)
	})
	return r, err
}

// botDecideRefusal says why decision d cannot be applied to run r, in
// memory.Runs' order of checks.
func botDecideRefusal(r research.Run, d research.Decision) error {
	switch {
	case r.Interrupt == nil || r.Interrupt.ID != d.InterruptID:
		return fmt.Errorf("run %s, interrupt %s: %w", r.ID, d.InterruptID, research.ErrNotWaiting)
	case r.Decision != nil:
		return fmt.Errorf("run %s, interrupt %s: %w", r.ID, d.InterruptID, research.ErrAlreadyDecided)
	}
	return fmt.Errorf("run %s is %s: %w", r.ID, r.State, research.ErrNotWaiting)
}

// RequestCancel implements research.Store.
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
			r, err = queryBotRun(ctx, tx, "cancel run "+runID, `UPDATE bot_runs SET state = 'cancelled', owner = '', lease_until = 0,
				cancel_requested_by = ?2, updated_at = ?3, finished_at = ?3 WHERE id = ?1 RETURNING `+botRunCols, runID, by, nanos(now))
			return err
		case research.StateRunning:
			r, err = queryBotRun(ctx, tx, "cancel run "+runID, `UPDATE bot_runs SET
				updated_at = CASE WHEN cancel_requested_by = '' THEN ?3 ELSE updated_at END,
				cancel_requested_by = CASE WHEN cancel_requested_by = '' THEN ?2 ELSE cancel_requested_by END
				WHERE id = ?1 RETURNING `+botRunCols, runID, by, nanos(now))
			return err
		}
		r = cur
		return fmt.Errorf("run %s is %s: %w", runID, cur.State, research.ErrFinished)
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
