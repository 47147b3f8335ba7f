// Package sqlitestore is the schedule.Store on SQLite (modernc.org/sqlite).
// Its tables come from the shared migration 0003_schedules.sql that
// storage/sqlite applies.
//
// Hand it the writer of storage/sqlite ((*sqlite.Store).DB()): one
// connection whose transactions begin IMMEDIATE, so the claim of a firing and
// the per-channel limit hold across processes sharing the file.
package sqlitestore

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

// Store is a schedule.Store on a SQLite database.
type Store struct {
	db *sql.DB
}

var _ schedule.Store = (*Store)(nil)

// New returns a store on db, whose schema must be migrated.
func New(db *sql.DB) *Store { return &Store{db: db} }

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func tm(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: commit: %w", err)
	}
	return nil
}

// CreateSchedule implements schedule.Store.
func (s *Store) CreateSchedule(ctx context.Context, sc schedule.Schedule, maxPerChannel int) error {
	sc = sc.Storable()
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("sqlitestore: options: %w", err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if maxPerChannel > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules WHERE channel = ?`, sc.Channel).Scan(&n); err != nil {
				return fmt.Errorf("sqlitestore: count schedules: %w", err)
			}
			if n >= maxPerChannel {
				return fmt.Errorf("sqlitestore: channel %s has %d schedules: %w", sc.Channel, n, schedule.ErrLimit)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedules (id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			sc.ID, ns(sc.ActiveSince), ns(sc.CreatedAt), ns(sc.UpdatedAt), b2i(sc.Enabled), sc.Team, sc.Channel, sc.Owner, sc.Topic, sc.Spec, sc.TZ, string(opts))
		if err != nil {
			return fmt.Errorf("sqlitestore: insert schedule: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlitestore: schedule %s: %w", sc.ID, schedule.ErrAlreadyExists)
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
	sc.ActiveSince, sc.CreatedAt, sc.UpdatedAt, sc.LastDue, sc.Enabled = tm(active), tm(created), tm(updated), tm(last), enabled != 0
	if err := json.Unmarshal([]byte(opts), &sc.Options); err != nil {
		return sc, fmt.Errorf("options of %s: %w", sc.ID, err)
	}
	return sc, nil
}

// GetSchedule implements schedule.Store.
func (s *Store) GetSchedule(ctx context.Context, id string) (schedule.Schedule, error) {
	sc, err := scanSchedule(s.db.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("sqlitestore: schedule %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return sc, fmt.Errorf("sqlitestore: get schedule %s: %w", id, err)
	}
	return sc, nil
}

// UpdateSchedule implements schedule.Store.
func (s *Store) UpdateSchedule(ctx context.Context, sc schedule.Schedule) error {
	sc = sc.Storable()
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("sqlitestore: options: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE schedules SET channel = ?, topic = ?, spec = ?, tz = ?, enabled = ?, options = ?, active_since = ?, updated_at = ? WHERE id = ?`,
		sc.Channel, sc.Topic, sc.Spec, sc.TZ, b2i(sc.Enabled), string(opts), ns(sc.ActiveSince), ns(sc.UpdatedAt), sc.ID)
	if err != nil {
		return fmt.Errorf("sqlitestore: update schedule %s: %w", sc.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlitestore: schedule %s: %w", sc.ID, schedule.ErrNotFound)
	}
	return nil
}

// DeleteSchedule implements schedule.Store.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE schedule_id = ?`, id); err != nil {
			return fmt.Errorf("sqlitestore: delete firings of %s: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlitestore: delete schedule %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlitestore: schedule %s: %w", id, schedule.ErrNotFound)
		}
		return nil
	})
}

// ListSchedules implements schedule.Store.
func (s *Store) ListSchedules(ctx context.Context, f schedule.Filter) ([]schedule.Schedule, error) {
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
		return nil, fmt.Errorf("sqlitestore: list schedules: %w", err)
	}
	defer rows.Close()
	var out []schedule.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: list schedules: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list schedules: %w", err)
	}
	return out, nil
}

func digestJSON(d *schedule.Digest) (any, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: digest: %w", err)
	}
	return string(b), nil
}

// ClaimFiring implements schedule.Store.
func (s *Store) ClaimFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = f.Digest.Storable()
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
			return fmt.Errorf("sqlitestore: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlitestore: claim: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, ns(f.Due), ns(f.LeaseUntil), ns(f.ClaimedAt), ns(f.FinishedAt), f.Attempts, b2i(f.Manual), string(f.State), f.Owner, f.Error, dg)
		if err != nil {
			return fmt.Errorf("sqlitestore: claim %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		n, _ := res.RowsAffected()
		claimed = n == 1
		return nil
	})
	return claimed, err
}

// RenewFiring implements schedule.Store.
func (s *Store) RenewFiring(ctx context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET lease_until = ? WHERE schedule_id = ? AND due = ? AND owner = ? AND state = 'running'`,
		ns(leaseUntil), id, ns(due), owner)
	if err != nil {
		return fmt.Errorf("sqlitestore: renew %s@%s: %w", id, due, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlitestore: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	return nil
}

// FinishFiring implements schedule.Store.
func (s *Store) FinishFiring(ctx context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	out = out.Storable()
	dg, err := digestJSON(out.Digest)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET state = ?, error = ?, digest = ?, finished_at = ?
		WHERE schedule_id = ? AND due = ? AND owner = ? AND state IN ('running', 'waiting')`,
		string(out.State), out.Error, dg, ns(out.FinishedAt), id, ns(due), owner)
	if err != nil {
		return fmt.Errorf("sqlitestore: finish %s@%s: %w", id, due, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlitestore: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
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
	f.Due, f.LeaseUntil, f.ClaimedAt, f.FinishedAt = tm(due), tm(lease), tm(claimed), tm(finished)
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
func (s *Store) TakeOverFiring(ctx context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	rows, err := s.db.QueryContext(ctx, `UPDATE schedule_firings SET owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE state = 'running' AND lease_until < ? AND attempts < ? RETURNING `+firingCols,
		owner, ns(leaseUntil), ns(now), maxAttempts)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: take over: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: take over: %w", err)
	}
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Store) FailExpired(ctx context.Context, now time.Time, maxAttempts int) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_firings SET state = 'failed', error = 'abandoned: the process running it stopped', finished_at = ?
		WHERE state = 'running' AND lease_until < ? AND attempts >= ?`, ns(now), ns(now), maxAttempts)
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: fail expired: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ApproveFiring implements schedule.Store.
func (s *Store) ApproveFiring(ctx context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `UPDATE schedule_firings SET state = 'running', owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE schedule_id = ? AND due = ? AND state = 'waiting' RETURNING `+firingCols, owner, ns(leaseUntil), id, ns(due)))
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.GetFiring(ctx, id, due); gerr != nil {
			return f, gerr
		}
		return f, fmt.Errorf("sqlitestore: firing %s@%s: %w", id, due, schedule.ErrNotWaiting)
	}
	if err != nil {
		return f, fmt.Errorf("sqlitestore: approve %s@%s: %w", id, due, err)
	}
	return f, nil
}

// GetFiring implements schedule.Store.
func (s *Store) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+` FROM schedule_firings WHERE schedule_id = ? AND due = ?`, id, ns(due)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlitestore: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlitestore: get firing %s@%s: %w", id, due, err)
	}
	return f, nil
}

// ListFirings implements schedule.Store.
func (s *Store) ListFirings(ctx context.Context, id string, limit int) ([]schedule.Firing, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+firingCols+` FROM schedule_firings WHERE schedule_id = ? ORDER BY due DESC LIMIT ?`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list firings: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list firings: %w", err)
	}
	return out, nil
}

// PreviousDigest implements schedule.Store.
func (s *Store) PreviousDigest(ctx context.Context, id string, before time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.QueryRowContext(ctx, `SELECT `+firingCols+` FROM schedule_firings
		WHERE schedule_id = ? AND due < ? AND state = 'done' AND digest IS NOT NULL ORDER BY due DESC LIMIT 1`, id, ns(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlitestore: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlitestore: previous digest of %s: %w", id, err)
	}
	return f, nil
}
