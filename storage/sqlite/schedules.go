package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
)

// Schedules is the schedule.Store on a SQLite database. Its writes go
// through the Store's writer, one connection whose transactions begin
// IMMEDIATE, so the claim of a firing and the per-channel limit hold across
// processes sharing the file.
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

// ClaimFiring implements schedule.Store.
func (s *Schedules) ClaimFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	var claimed bool
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM schedules WHERE id = ?`, f.ScheduleID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: claim: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, nanos(f.Due), nanos(f.LeaseUntil), nanos(f.ClaimedAt), nanos(f.FinishedAt), f.Attempts, b2i(f.Manual), string(f.State), f.Owner, f.Error, dg)
		if err != nil {
			return fmt.Errorf("sqlite: claim %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		n, _ := res.RowsAffected()
		claimed = n == 1
		return nil
	})
	return claimed, err
}

// RenewFiring implements schedule.Store.
func (s *Schedules) RenewFiring(ctx context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET lease_until = ? WHERE schedule_id = ? AND due = ? AND owner = ? AND state = 'running'`,
		nanos(leaseUntil), id, nanos(due), owner)
	if err != nil {
		return fmt.Errorf("sqlite: renew %s@%s: %w", id, due, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	return nil
}

// FinishFiring implements schedule.Store.
func (s *Schedules) FinishFiring(ctx context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	dg, err := digestJSON(out.Digest)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET state = ?, error = ?, digest = ?, finished_at = ?
		WHERE schedule_id = ? AND due = ? AND owner = ? AND state IN ('running', 'waiting')`,
		string(out.State), out.Error, dg, nanos(out.FinishedAt), id, nanos(due), owner)
	if err != nil {
		return fmt.Errorf("sqlite: finish %s@%s: %w", id, due, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	return nil
}

const firingCols = `schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest`

func scanFiring(row interface{ Scan(...any) error }) (schedule.Firing, error) {
	var f schedule.Firing
	var due, lease, claimed, finished, manual int64
	var state string
	var dg sql.NullString
	if err := row.Scan(&f.ScheduleID, &due, &lease, &claimed, &finished, &f.Attempts, &manual, &state, &f.Owner, &f.Error, &dg); err != nil {
		return f, err
	}
	f.Due, f.LeaseUntil, f.ClaimedAt, f.FinishedAt = fromNanos(due), fromNanos(lease), fromNanos(claimed), fromNanos(finished)
	f.Manual, f.State = manual != 0, schedule.FiringState(state)
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

// TakeOverFiring implements schedule.Store.
func (s *Schedules) TakeOverFiring(ctx context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	rows, err := s.db.QueryContext(ctx, `UPDATE schedule_firings SET owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE state = 'running' AND lease_until < ? AND attempts < ? RETURNING `+firingCols,
		owner, nanos(leaseUntil), nanos(now), maxAttempts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: take over: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: take over: %w", err)
	}
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Schedules) FailExpired(ctx context.Context, now time.Time, maxAttempts int) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET state = 'failed', error = 'abandoned: the process running it stopped', finished_at = ?
		WHERE state = 'running' AND lease_until < ? AND attempts >= ?`, nanos(now), nanos(now), maxAttempts)
	if err != nil {
		return 0, fmt.Errorf("sqlite: fail expired: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ApproveFiring implements schedule.Store.
func (s *Schedules) ApproveFiring(ctx context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `UPDATE schedule_firings SET state = 'running', owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE schedule_id = ? AND due = ? AND state = 'waiting' RETURNING `+firingCols, owner, nanos(leaseUntil), id, nanos(due)))
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.GetFiring(ctx, id, due); gerr != nil {
			return f, gerr
		}
		return f, fmt.Errorf("sqlite: firing %s@%s: %w", id, due, schedule.ErrNotWaiting)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: approve %s@%s: %w", id, due, err)
	}
	return f, nil
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+` FROM schedule_firings WHERE schedule_id = ? AND due = ?`, id, nanos(due)))
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
	rows, err := s.db.QueryContext(ctx, `SELECT `+firingCols+` FROM schedule_firings WHERE schedule_id = ? ORDER BY due DESC LIMIT ?`, id, limit)
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
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+` FROM schedule_firings
		WHERE schedule_id = ? AND due < ? AND state = 'done' AND digest IS NOT NULL ORDER BY due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, err)
	}
	return f, nil
}
