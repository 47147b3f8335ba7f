package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"deepresearch/jobs"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Schedules is the schedule.Store on a SQLite database. Its writes go
// through the Store's writer, one connection whose transactions begin
// IMMEDIATE, so the record of a firing and the per-channel limit hold
// across processes sharing the file.
//
// A firing is a row of schedule_firings (manual, claimed_at, the outcome's
// error text, the digest, the final state of one that never ran); one that
// ran shows the state of its digest run's job (migration 0016,
// jobmap.FiringRun).
type Schedules struct {
	db *sql.DB
}

// NewSchedules returns the schedule store on s's database.
func NewSchedules(s *Store) *Schedules { return &Schedules{db: s.DB()} }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (s *Schedules) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
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

// CreateSchedule implements schedule.Store.
func (s *Schedules) CreateSchedule(ctx context.Context, sc schedule.Schedule, maxPerChannel int) error {
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("sqlite: options: %w", err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if maxPerChannel > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules WHERE channel = ?`, sc.Channel).Scan(&n); err != nil {
				return fmt.Errorf("sqlite: count schedules: %w", err)
			}
			if n >= maxPerChannel {
				return fmt.Errorf("sqlite: channel %s has %d schedules: %w", sc.Channel, n, schedule.ErrLimit)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedules (id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			sc.ID, nanos(sc.ActiveSince), nanos(sc.CreatedAt), nanos(sc.UpdatedAt), b2i(sc.Enabled), sc.Team, sc.Channel, sc.Owner, sc.Topic, sc.Spec, sc.TZ, string(opts))
		if err != nil {
			return fmt.Errorf("sqlite: insert schedule: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: schedule %s: %w", sc.ID, schedule.ErrAlreadyExists)
		}
		return nil
	})
}

const scheduleCols = `id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options,
	COALESCE((SELECT max(due) FROM schedule_firings f WHERE f.schedule_id = schedules.id), 0)`

func scanSchedule(row interface{ Scan(...any) error }) (schedule.Schedule, error) {
	var sc schedule.Schedule
	var active, created, updated, last, enabled int64
	var opts string
	if err := row.Scan(&sc.ID, &active, &created, &updated, &enabled, &sc.Team, &sc.Channel, &sc.Owner, &sc.Topic, &sc.Spec, &sc.TZ, &opts, &last); err != nil {
		return sc, err
	}
	sc.ActiveSince, sc.CreatedAt, sc.UpdatedAt, sc.LastDue, sc.Enabled = fromNanos(active), fromNanos(created), fromNanos(updated), fromNanos(last), enabled != 0
	if err := json.Unmarshal([]byte(opts), &sc.Options); err != nil {
		return sc, fmt.Errorf("options of %s: %w", sc.ID, err)
	}
	return sc, nil
}

// GetSchedule implements schedule.Store.
func (s *Schedules) GetSchedule(ctx context.Context, id string) (schedule.Schedule, error) {
	sc, err := scanSchedule(s.db.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("sqlite: schedule %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return sc, fmt.Errorf("sqlite: get schedule %s: %w", id, err)
	}
	return sc, nil
}

// UpdateSchedule implements schedule.Store.
func (s *Schedules) UpdateSchedule(ctx context.Context, sc schedule.Schedule) error {
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("sqlite: options: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE schedules SET channel = ?, topic = ?, spec = ?, tz = ?, enabled = ?, options = ?, active_since = ?, updated_at = ? WHERE id = ?`,
		sc.Channel, sc.Topic, sc.Spec, sc.TZ, b2i(sc.Enabled), string(opts), nanos(sc.ActiveSince), nanos(sc.UpdatedAt), sc.ID)
	if err != nil {
		return fmt.Errorf("sqlite: update schedule %s: %w", sc.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: schedule %s: %w", sc.ID, schedule.ErrNotFound)
	}
	return nil
}

// DeleteSchedule implements schedule.Store.
func (s *Schedules) DeleteSchedule(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE schedule_id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: delete firings of %s: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete schedule %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: schedule %s: %w", id, schedule.ErrNotFound)
		}
		return nil
	})
}

// ListSchedules implements schedule.Store.
func (s *Schedules) ListSchedules(ctx context.Context, f schedule.Filter) ([]schedule.Schedule, error) {
	var where []string
	var args []any
	if f.Channel != "" {
		where, args = append(where, "channel = ?"), append(args, f.Channel)
	}
	if f.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, f.Owner)
	}
	if f.EnabledOnly {
		where = append(where, "enabled = 1")
	}
	q := `SELECT ` + scheduleCols + ` FROM schedules`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	defer rows.Close()
	var out []schedule.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list schedules: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	return out, nil
}

func digestJSON(d *schedule.Digest) (any, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("sqlite: digest: %w", err)
	}
	return string(b), nil
}

// RecordFiring implements schedule.Store.
func (s *Schedules) RecordFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	var recorded bool
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM schedules WHERE id = ?`, f.ScheduleID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: record firing: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule_id, due, claimed_at, manual, error, digest, state)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, nanos(f.Due), nanos(f.ClaimedAt), b2i(f.Manual), f.Error, dg, jobmap.RowState(f.State))
		if err != nil {
			return fmt.Errorf("sqlite: record firing %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		n, _ := res.RowsAffected()
		recorded = n > 0
		return nil
	})
	return recorded, err
}

// RecordOutcome implements schedule.Store.
func (s *Schedules) RecordOutcome(ctx context.Context, id string, due time.Time, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	dg, err := digestJSON(out.Digest)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET error = ?, digest = COALESCE(?, digest) WHERE schedule_id = ? AND due = ?`,
		out.Error, dg, id, nanos(due))
	if err != nil {
		return fmt.Errorf("sqlite: record outcome of %s@%s: %w", id, due, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	return nil
}

// firingCols and firingFrom read a firing with its run's job, if any.
const (
	firingCols = `f.schedule_id, f.due, f.claimed_at, f.manual, f.error, f.digest, f.state,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.finished_at, j.error`
	firingFrom = ` FROM schedule_firings f LEFT JOIN jobs j ON j.kind = 'run' AND j.key = 'digest:' || f.schedule_id || '@' || f.due`
)

func scanFiring(row interface{ Scan(...any) error }) (schedule.Firing, error) {
	var f schedule.Firing
	var rowState string
	var due, claimed, manual int64
	var dg, jState, jOwner, jError sql.NullString
	var jPayload []byte
	var lease, attempts, finished sql.NullInt64
	if err := row.Scan(&f.ScheduleID, &due, &claimed, &manual, &f.Error, &dg, &rowState,
		&jState, &jPayload, &jOwner, &lease, &attempts, &finished, &jError); err != nil {
		return f, err
	}
	f.Due, f.ClaimedAt, f.Manual = fromNanos(due), fromNanos(claimed), manual != 0
	j := jobs.Job{State: jobs.State(jState.String), Payload: jPayload, Owner: jOwner.String, Attempts: int(attempts.Int64),
		LeaseUntil: jobTime(lease.Int64), FinishedAt: jobTime(finished.Int64), Error: jError.String}
	jobmap.FiringRun(&f, rowState, j, jState.Valid)
	if dg.Valid {
		f.Digest = new(schedule.Digest)
		if err := json.Unmarshal([]byte(dg.String), f.Digest); err != nil {
			return f, fmt.Errorf("digest of %s@%s: %w", f.ScheduleID, f.Due, err)
		}
	}
	return f, nil
}

func collectFirings(rows *sql.Rows) ([]schedule.Firing, error) {
	defer rows.Close()
	var out []schedule.Firing
	for rows.Next() {
		f, err := scanFiring(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = ? AND f.due = ?`, id, nanos(due)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlite: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: get firing %s@%s: %w", id, due, err)
	}
	return f, nil
}

// ListFirings implements schedule.Store.
func (s *Schedules) ListFirings(ctx context.Context, id string, limit int) ([]schedule.Firing, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = ? ORDER BY f.due DESC LIMIT ?`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list firings: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list firings: %w", err)
	}
	return out, nil
}

// PreviousDigest implements schedule.Store.
func (s *Schedules) PreviousDigest(ctx context.Context, id string, before time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+firingFrom+`
		WHERE f.schedule_id = ? AND f.due < ? AND f.digest IS NOT NULL
		ORDER BY f.due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, err)
	}
	return f, nil
}
