package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Runs is research.Store on the Store's database (tables bot_*, migrations
// 0002, 0005 and 0006), shared by any number of processes. The
// compare-and-set methods are single conditional UPDATEs (READ COMMITTED
// re-checks the condition on the latest row version, so exactly one of
// concurrent callers wins); AcquireRuns locks its candidates with FOR UPDATE
// SKIP LOCKED; CreateRun serialises on transaction-scoped advisory locks on
// the requester and the thread before it checks and inserts (and a partial
// unique index backs the one-active-run-per-thread rule). Times are stored as
// Unix nanoseconds (0: zero time) and read back in UTC.
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

const botActiveStates = `('queued', 'running', 'waiting')`

var botRunColumns = []string{"seq", "id", "thread_id", "team", "channel", "thread_ts", "requester", "question", "follow_up", "options",
	"state", "owner", "lease_until", "attempt", "status_ts",
	"intr_id", "intr_kind", "intr_text", "intr_message_ts",
	"dec_interrupt_id", "dec_action", "dec_text", "dec_by", "dec_at",
	"cancel_requested_by", "error", "created_at", "updated_at", "finished_at"}

// botRunCols lists the columns scanBotRun reads, each prefixed with p.
func botRunCols(p string) string {
	return p + strings.Join(botRunColumns, ", "+p)
}

// scanBotRun reads one row of botRunCols and returns the run and its seq.
func scanBotRun(row pgx.Row) (research.Run, int64, error) {
	var (
		r                           research.Run
		seq                         int64
		options, state              string
		leaseUntil, decAt           int64
		created, updated, finished  int64
		intrID, decID               *string
		intrKind, intrText, intrMsg string
		decAction, decText, decBy   string
	)
	if err := row.Scan(&seq, &r.ID, &r.ThreadID, &r.Key.Team, &r.Key.Channel, &r.Key.ThreadTS, &r.Requester, &r.Question,
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
	if intrID != nil {
		r.Interrupt = &research.PendingInterrupt{ID: *intrID, Kind: research.InterruptKind(intrKind), Text: intrText, MessageTS: intrMsg}
	}
	if decID != nil {
		r.Decision = &research.Decision{InterruptID: *decID, Action: research.Action(decAction), Text: decText, By: decBy, At: fromNanos(decAt)}
	}
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = fromNanos(created), fromNanos(updated), fromNanos(finished)
	return r, seq, nil
}

type botQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queryBotRun reads one run with q (which returns botRunCols); ErrNotFound if
// there is no row.
func queryBotRun(ctx context.Context, db botQuerier, what, q string, args ...any) (research.Run, error) {
	r, _, err := scanBotRun(db.QueryRow(ctx, q, args...))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return research.Run{}, fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return research.Run{}, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return r, nil
}

func getBotRun(ctx context.Context, db botQuerier, id string, lock string) (research.Run, error) {
	return queryBotRun(ctx, db, "run "+id, `SELECT `+botRunCols("")+` FROM bot_runs WHERE id = $1`+lock, id)
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

// CreateRun implements research.Store.
func (b *Runs) CreateRun(ctx context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	opts, err := json.Marshal(r.Options)
	if err != nil {
		return fmt.Errorf("postgres: run %s options: %w", r.ID, err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	var intrID, decID *string
	var intr research.PendingInterrupt
	var dec research.Decision
	if r.Interrupt != nil {
		intr, intrID = *r.Interrupt, &r.Interrupt.ID
	}
	if r.Decision != nil {
		dec, decID = *r.Decision, &r.Decision.InterruptID
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
				EXISTS (SELECT 1 FROM bot_runs WHERE thread_id = $2 AND state IN `+botActiveStates+`),
				(SELECT count(*) FROM bot_runs WHERE requester = $3 AND state IN `+botActiveStates+`)`,
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
				id, thread_id, team, channel, thread_ts, requester, question, follow_up, options,
				state, owner, lease_until, attempt, status_ts,
				intr_id, intr_kind, intr_text, intr_message_ts,
				dec_interrupt_id, dec_action, dec_text, dec_by, dec_at,
				cancel_requested_by, error, created_at, updated_at, finished_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued', '', 0, 0, $10,
				$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`,
			r.ID, r.ThreadID, r.Key.Team, r.Key.Channel, r.Key.ThreadTS, r.Requester, r.Question, r.FollowUp, string(opts),
			r.StatusTS, intrID, string(intr.Kind), intr.Text, intr.MessageTS,
			decID, string(dec.Action), dec.Text, dec.By, nanos(dec.At),
			r.CancelRequestedBy, r.Error, nanos(r.CreatedAt), nanos(r.UpdatedAt), nanos(r.FinishedAt))
		if err != nil {
			return fmt.Errorf("postgres: create run %s: %w", r.ID, err)
		}
		return nil
	})
	// The unique indexes back the checks (they cannot fire while every
	// writer takes the locks, but say the same if they do).
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if pgErr.ConstraintName == "bot_runs_active_thread" {
			return fmt.Errorf("thread %s: %w", r.ThreadID, research.ErrThreadBusy)
		}
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
		`SELECT `+botRunCols("")+` FROM bot_runs WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1`, threadID)
}

// ListRuns implements research.Store.
func (b *Runs) ListRuns(ctx context.Context, f research.RunFilter) ([]research.Run, error) {
	var where []string
	var args []any
	if f.Requester != "" {
		args = append(args, f.Requester)
		where = append(where, fmt.Sprintf("requester = $%d", len(args)))
	}
	if f.Channel != "" {
		args = append(args, f.Channel)
		where = append(where, fmt.Sprintf("channel = $%d", len(args)))
	}
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, s := range f.States {
			states[i] = string(s)
		}
		args = append(args, states)
		where = append(where, fmt.Sprintf("state = ANY($%d::text[])", len(args)))
	}
	q := `SELECT ` + botRunCols("") + ` FROM bot_runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY seq DESC`
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

// botAcquirable selects runs that may be acquired at $2.
const botAcquirable = `(state = 'queued' OR (state = 'running' AND lease_until < $2))`

// AcquireRun implements research.Store.
func (b *Runs) AcquireRun(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	r, err := queryBotRun(ctx, b.s.pool, "acquire run "+id, `UPDATE bot_runs
		SET state = 'running', owner = $1, lease_until = $3, attempt = attempt + 1, updated_at = $2
		WHERE id = $4 AND `+botAcquirable+` RETURNING `+botRunCols(""),
		owner, nanos(now), nanos(now.Add(lease)), id)
	if !errors.Is(err, research.ErrNotFound) {
		return r, err
	}
	cur, err := getBotRun(ctx, b.s.pool, id, "")
	if err != nil {
		return research.Run{}, err
	}
	return research.Run{}, fmt.Errorf("run %s (%s by %q): %w", id, cur.State, cur.Owner, research.ErrNotAcquired)
}

// AcquireRuns implements research.Store.
func (b *Runs) AcquireRuns(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := b.s.pool.Query(ctx, `WITH c AS (
			SELECT seq FROM bot_runs WHERE `+botAcquirable+`
			ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED
		)
		UPDATE bot_runs r
		SET state = 'running', owner = $1, lease_until = $3, attempt = r.attempt + 1, updated_at = $2
		FROM c WHERE r.seq = c.seq
		RETURNING `+botRunCols("r."), owner, nanos(now), nanos(now.Add(lease)), lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: acquire runs: %w", err)
	}
	defer rows.Close()
	type seqRun struct {
		seq int64
		run research.Run
	}
	var got []seqRun
	for rows.Next() {
		r, seq, err := scanBotRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: acquire runs: %w", err)
		}
		got = append(got, seqRun{seq, r})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: acquire runs: %w", err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	out := make([]research.Run, len(got))
	for i, g := range got {
		out[i] = g.run
	}
	return out, nil
}

// held runs the update q fenced by owner (q ends with botHeldWhere, its
// last two parameters being the id and the owner) and maps "no row" to
// ErrNotFound or ErrLeaseLost.
func (b *Runs) held(ctx context.Context, what, id, owner, q string, args ...any) (research.Run, error) {
	args = append(args, id, owner)
	r, err := queryBotRun(ctx, b.s.pool, what, fmt.Sprintf(q, len(args)-1, len(args)), args...)
	if !errors.Is(err, research.ErrNotFound) {
		return r, err
	}
	cur, err := getBotRun(ctx, b.s.pool, id, "")
	if err != nil {
		return research.Run{}, err
	}
	return research.Run{}, fmt.Errorf("%s (%s by %q): %w", what, cur.State, cur.Owner, research.ErrLeaseLost)
}

// botHeldWhere fences an update by owner; held fills in the parameter numbers.
var botHeldWhere = ` WHERE id = $%d AND state = 'running' AND owner = $%d RETURNING ` + botRunCols("")

// Heartbeat implements research.Store.
func (b *Runs) Heartbeat(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	return b.held(ctx, "heartbeat run "+id, id, owner,
		`UPDATE bot_runs SET lease_until = $1, updated_at = $2`+botHeldWhere, nanos(now.Add(lease)), nanos(now))
}

// ReleaseRun implements research.Store.
func (b *Runs) ReleaseRun(ctx context.Context, id, owner string, now time.Time) error {
	_, err := b.held(ctx, "release run "+id, id, owner,
		`UPDATE bot_runs SET state = 'queued', owner = '', lease_until = 0, attempt = CASE WHEN attempt > 1 THEN attempt - 1 ELSE attempt END, updated_at = $1`+botHeldWhere, nanos(now))
	return err
}

// WaitRun implements research.Store.
func (b *Runs) WaitRun(ctx context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	_, err := b.held(ctx, "wait run "+id, id, owner,
		`UPDATE bot_runs SET state = 'waiting', owner = '', lease_until = 0, updated_at = $1,
			intr_id = $2, intr_kind = $3, intr_text = $4, intr_message_ts = $5,
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
		`UPDATE bot_runs SET state = $1, owner = '', lease_until = 0, error = $2, updated_at = $3, finished_at = $3`+botHeldWhere,
		string(state), errText, nanos(now))
	return err
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

// Decide implements research.Store.
func (b *Runs) Decide(ctx context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	r, err := queryBotRun(ctx, b.s.pool, "decide run "+runID, `UPDATE bot_runs SET
			dec_interrupt_id = $2, dec_action = $3, dec_text = $4, dec_by = $5, dec_at = $6, updated_at = $6,
			state = CASE WHEN $7::boolean THEN 'cancelled' ELSE 'queued' END,
			finished_at = CASE WHEN $7::boolean THEN $6 ELSE finished_at END,
			cancel_requested_by = CASE WHEN $7::boolean THEN $5 ELSE cancel_requested_by END,
			attempt = CASE WHEN $7::boolean THEN attempt ELSE 0 END
		WHERE id = $1 AND state = 'waiting' AND intr_id = $2 AND dec_interrupt_id IS NULL
		RETURNING `+botRunCols(""),
		runID, d.InterruptID, string(d.Action), d.Text, d.By, nanos(d.At), d.Action == research.ActionCancel)
	if !errors.Is(err, research.ErrNotFound) {
		return r, err
	}
	if r, err = getBotRun(ctx, b.s.pool, runID, ""); err != nil {
		return research.Run{}, err
	}
	// Why the compare-and-set failed, in memory.Runs' order of checks.
	switch {
	case r.Interrupt == nil || r.Interrupt.ID != d.InterruptID:
		return r, fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, research.ErrNotWaiting)
	case r.Decision != nil:
		return r, fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, research.ErrAlreadyDecided)
	}
	return r, fmt.Errorf("run %s is %s: %w", runID, r.State, research.ErrNotWaiting)
}

// RequestCancel implements research.Store: one transaction holding the run's row
// lock from the read to the change.
func (b *Runs) RequestCancel(ctx context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	var r research.Run
	var cancelled bool
	err := pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		cur, err := getBotRun(ctx, tx, runID, " FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		switch cur.State {
		case research.StateQueued, research.StateWaiting:
			cancelled = true
			r, err = queryBotRun(ctx, tx, "cancel run "+runID, `UPDATE bot_runs SET state = 'cancelled', owner = '', lease_until = 0,
				cancel_requested_by = $2, updated_at = $3, finished_at = $3 WHERE id = $1 RETURNING `+botRunCols(""), runID, by, nanos(now))
			return err
		case research.StateRunning:
			if cur.CancelRequestedBy != "" {
				r = cur
				return nil
			}
			r, err = queryBotRun(ctx, tx, "cancel run "+runID, `UPDATE bot_runs SET cancel_requested_by = $2, updated_at = $3
				WHERE id = $1 RETURNING `+botRunCols(""), runID, by, nanos(now))
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
