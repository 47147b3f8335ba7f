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

	"deepresearch/jobs"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Schedules is a schedule.Store on PostgreSQL.
//
// A firing is a row of schedule_firings (manual, claimed_at, the outcome's
// error text, the digest, the final state of one that never ran); one that
// ran shows the state of its digest run's job (migration 0016,
// jobmap.FiringRun).
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

// RecordFiring implements schedule.Store.
func (s *Schedules) RecordFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO schedule_firings (schedule_id, due, claimed_at, manual, error, digest, state)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (schedule_id, due) DO NOTHING`,
		f.ScheduleID, nanos(f.Due), nanos(f.ClaimedAt), f.Manual, f.Error, dg, jobmap.RowState(f.State))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return false, fmt.Errorf("postgres: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: record firing %s@%s: %w", f.ScheduleID, f.Due, err)
	}
	return tag.RowsAffected() > 0, nil
}

// RecordOutcome implements schedule.Store.
func (s *Schedules) RecordOutcome(ctx context.Context, id string, due time.Time, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	dg, err := digestJSON(out.Digest)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE schedule_firings SET error = $1, digest = COALESCE($2, digest) WHERE schedule_id = $3 AND due = $4`,
		out.Error, dg, id, nanos(due))
	if err != nil {
		return fmt.Errorf("postgres: record outcome of %s@%s: %w", id, due, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	return nil
}

// firingCols and firingFrom read a firing with its run's job, if any.
const (
	firingCols = `f.schedule_id, f.due, f.claimed_at, f.manual, f.error, f.digest, f.state,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.finished_at, j.error`
	firingFrom = ` FROM schedule_firings f LEFT JOIN jobs j ON j.kind = 'run' AND j.key = 'digest:' || f.schedule_id || '@' || f.due::text`
)

func scanFiring(row pgx.Row) (schedule.Firing, error) {
	var f schedule.Firing
	var due, claimed int64
	var rowState string
	var dg, payload []byte
	var state, owner, jerr *string
	var lease, finished *int64
	var attempts *int
	if err := row.Scan(&f.ScheduleID, &due, &claimed, &f.Manual, &f.Error, &dg, &rowState,
		&state, &payload, &owner, &lease, &attempts, &finished, &jerr); err != nil {
		return f, err
	}
	f.Due, f.ClaimedAt = fromNanos(due), fromNanos(claimed)
	j := jobs.Job{Payload: payload}
	if state != nil {
		j.State, j.Owner, j.Attempts, j.Error = jobs.State(*state), *owner, *attempts, *jerr
		j.LeaseUntil, j.FinishedAt = jobTime(*lease), jobTime(*finished)
	}
	jobmap.FiringRun(&f, rowState, j, state != nil)
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

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.pool.QueryRow(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = $1 AND f.due = $2`, id, nanos(due)))
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
	q := `SELECT ` + firingCols + firingFrom + ` WHERE f.schedule_id = $1 ORDER BY f.due DESC`
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
	f, err := scanFiring(s.pool.QueryRow(ctx, `SELECT `+firingCols+firingFrom+`
		WHERE f.schedule_id = $1 AND f.due < $2 AND f.digest IS NOT NULL
		ORDER BY f.due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("postgres: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("postgres: previous digest of %s: %w", id, err)
	}
	return f, nil
}
