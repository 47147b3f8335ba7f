package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
)

// Schedules is a schedule.Store on PostgreSQL.
type Schedules struct {
	pool *pgxpool.Pool
}

// NewSchedules returns the schedule store on s's database.
func NewSchedules(s *Store) *Schedules { return &Schedules{pool: s.Pool()} }

// lockChannel is the advisory lock class serialising creations in a channel.
const lockChannel int32 = 0x64727363 // "drsc"

// CreateSchedule implements schedule.Store.
func (s *Schedules) CreateSchedule(ctx context.Context, sc schedule.Schedule, maxPerChannel int) error {
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("postgres: options: %w", err)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if maxPerChannel > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockChannel, sc.Channel); err != nil {
				return fmt.Errorf("postgres: lock channel: %w", err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE channel = $1`, sc.Channel).Scan(&n); err != nil {
				return fmt.Errorf("postgres: count schedules: %w", err)
			}
			if n >= maxPerChannel {
				return fmt.Errorf("postgres: channel %s has %d schedules: %w", sc.Channel, n, schedule.ErrLimit)
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO schedules (id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
			sc.ID, nanos(sc.ActiveSince), nanos(sc.CreatedAt), nanos(sc.UpdatedAt), sc.Enabled, sc.Team, sc.Channel, sc.Owner, sc.Topic, sc.Spec, sc.TZ, opts)
		if err != nil {
			return fmt.Errorf("postgres: insert schedule: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: schedule %s: %w", sc.ID, schedule.ErrAlreadyExists)
		}
		return nil
	})
}

const scheduleCols = `id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options,
	COALESCE((SELECT max(due) FROM schedule_firings f WHERE f.schedule_id = schedules.id), 0)`

func scanSchedule(row pgx.Row) (schedule.Schedule, error) {
	var sc schedule.Schedule
	var active, created, updated, last int64
	var opts []byte
	if err := row.Scan(&sc.ID, &active, &created, &updated, &sc.Enabled, &sc.Team, &sc.Channel, &sc.Owner, &sc.Topic, &sc.Spec, &sc.TZ, &opts, &last); err != nil {
		return sc, err
	}
	sc.ActiveSince, sc.CreatedAt, sc.UpdatedAt, sc.LastDue = fromNanos(active), fromNanos(created), fromNanos(updated), fromNanos(last)
	if err := json.Unmarshal(opts, &sc.Options); err != nil {
		return sc, fmt.Errorf("options of %s: %w", sc.ID, err)
	}
	return sc, nil
}

// GetSchedule implements schedule.Store.
func (s *Schedules) GetSchedule(ctx context.Context, id string) (schedule.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sc, fmt.Errorf("postgres: schedule %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return sc, fmt.Errorf("postgres: get schedule %s: %w", id, err)
	}
	return sc, nil
}

// UpdateSchedule implements schedule.Store.
func (s *Schedules) UpdateSchedule(ctx context.Context, sc schedule.Schedule) error {
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return fmt.Errorf("postgres: options: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE schedules SET channel = $1, topic = $2, spec = $3, tz = $4, enabled = $5, options = $6, active_since = $7, updated_at = $8 WHERE id = $9`,
		sc.Channel, sc.Topic, sc.Spec, sc.TZ, sc.Enabled, opts, nanos(sc.ActiveSince), nanos(sc.UpdatedAt), sc.ID)
	if err != nil {
		return fmt.Errorf("postgres: update schedule %s: %w", sc.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: schedule %s: %w", sc.ID, schedule.ErrNotFound)
	}
	return nil
}

// DeleteSchedule implements schedule.Store (firings go by ON DELETE CASCADE).
func (s *Schedules) DeleteSchedule(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete schedule %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: schedule %s: %w", id, schedule.ErrNotFound)
	}
	return nil
}

// ListSchedules implements schedule.Store.
func (s *Schedules) ListSchedules(ctx context.Context, f schedule.Filter) ([]schedule.Schedule, error) {
	var where []string
	var args []any
	if f.Channel != "" {
		args = append(args, f.Channel)
		where = append(where, "channel = $"+strconv.Itoa(len(args)))
	}
	if f.Owner != "" {
		args = append(args, f.Owner)
		where = append(where, "owner = $"+strconv.Itoa(len(args)))
	}
	if f.EnabledOnly {
		where = append(where, "enabled")
	}
	q := `SELECT ` + scheduleCols + ` FROM schedules`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", err)
	}
	defer rows.Close()
	var out []schedule.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list schedules: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", err)
	}
	return out, nil
}

func digestJSON(d *schedule.Digest) ([]byte, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("postgres: digest: %w", err)
	}
	return b, nil
}

// ClaimFiring implements schedule.Store.
func (s *Schedules) ClaimFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (schedule_id, due) DO NOTHING`,
		f.ScheduleID, nanos(f.Due), nanos(f.LeaseUntil), nanos(f.ClaimedAt), nanos(f.FinishedAt), f.Attempts, f.Manual, string(f.State), f.Owner, f.Error, dg)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: the schedule is gone
			return false, fmt.Errorf("postgres: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		}
		return false, fmt.Errorf("postgres: claim %s@%s: %w", f.ScheduleID, f.Due, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RenewFiring implements schedule.Store.
func (s *Schedules) RenewFiring(ctx context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE schedule_firings SET lease_until = $1 WHERE schedule_id = $2 AND due = $3 AND owner = $4 AND state = 'running'`,
		nanos(leaseUntil), id, nanos(due), owner)
	if err != nil {
		return fmt.Errorf("postgres: renew %s@%s: %w", id, due, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
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
	tag, err := s.pool.Exec(ctx, `UPDATE schedule_firings SET state = $1, error = $2, digest = $3, finished_at = $4
		WHERE schedule_id = $5 AND due = $6 AND owner = $7 AND state IN ('running', 'waiting')`,
		string(out.State), out.Error, dg, nanos(out.FinishedAt), id, nanos(due), owner)
	if err != nil {
		return fmt.Errorf("postgres: finish %s@%s: %w", id, due, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	return nil
}

const firingCols = `schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest`

func scanFiring(row pgx.Row) (schedule.Firing, error) {
	var f schedule.Firing
	var due, lease, claimed, finished int64
	var state string
	var dg []byte
	if err := row.Scan(&f.ScheduleID, &due, &lease, &claimed, &finished, &f.Attempts, &f.Manual, &state, &f.Owner, &f.Error, &dg); err != nil {
		return f, err
	}
	f.Due, f.LeaseUntil, f.ClaimedAt, f.FinishedAt = fromNanos(due), fromNanos(lease), fromNanos(claimed), fromNanos(finished)
	f.State = schedule.FiringState(state)
	if dg != nil {
		f.Digest = new(schedule.Digest)
		if err := json.Unmarshal(dg, f.Digest); err != nil {
			return f, fmt.Errorf("digest of %s@%s: %w", f.ScheduleID, f.Due, err)
		}
	}
	return f, nil
}

func collectFirings(rows pgx.Rows) ([]schedule.Firing, error) {
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
	rows, err := s.pool.Query(ctx, `UPDATE schedule_firings SET owner = $1, lease_until = $2, attempts = attempts + 1
		WHERE state = 'running' AND lease_until < $3 AND attempts < $4 RETURNING `+firingCols,
		owner, nanos(leaseUntil), nanos(now), maxAttempts)
	if err != nil {
		return nil, fmt.Errorf("postgres: take over: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: take over: %w", err)
	}
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Schedules) FailExpired(ctx context.Context, now time.Time, maxAttempts int) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE schedule_firings SET state = 'failed', error = 'abandoned: the process running it stopped', finished_at = $1
		WHERE state = 'running' AND lease_until < $1 AND attempts >= $2`, nanos(now), maxAttempts)
	if err != nil {
		return 0, fmt.Errorf("postgres: fail expired: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ApproveFiring implements schedule.Store.
func (s *Schedules) ApproveFiring(ctx context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.pool.QueryRow(ctx, `UPDATE schedule_firings SET state = 'running', owner = $1, lease_until = $2, attempts = attempts + 1
		WHERE schedule_id = $3 AND due = $4 AND state = 'waiting' RETURNING `+firingCols, owner, nanos(leaseUntil), id, nanos(due)))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.GetFiring(ctx, id, due); gerr != nil {
			return f, gerr
		}
		return f, fmt.Errorf("postgres: firing %s@%s: %w", id, due, schedule.ErrNotWaiting)
	}
	if err != nil {
		return f, fmt.Errorf("postgres: approve %s@%s: %w", id, due, err)
	}
	return f, nil
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.pool.QueryRow(ctx, `SELECT `+firingCols+` FROM schedule_firings WHERE schedule_id = $1 AND due = $2`, id, nanos(due)))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("postgres: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("postgres: get firing %s@%s: %w", id, due, err)
	}
	return f, nil
}

// ListFirings implements schedule.Store.
func (s *Schedules) ListFirings(ctx context.Context, id string, limit int) ([]schedule.Firing, error) {
	q := `SELECT ` + firingCols + ` FROM schedule_firings WHERE schedule_id = $1 ORDER BY due DESC`
	args := []any{id}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list firings: %w", err)
	}
	out, err := collectFirings(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: list firings: %w", err)
	}
	return out, nil
}

// PreviousDigest implements schedule.Store.
func (s *Schedules) PreviousDigest(ctx context.Context, id string, before time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.pool.QueryRow(ctx, `SELECT `+firingCols+` FROM schedule_firings
		WHERE schedule_id = $1 AND due < $2 AND state = 'done' AND digest IS NOT NULL ORDER BY due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("postgres: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("postgres: previous digest of %s: %w", id, err)
	}
	return f, nil
}
