package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"deepresearch/jobs"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Schedules is schedule.Store on a DB.
//
// A firing is a row of schedule_firings (manual, claimed_at, the outcome's
// error text, the digest, the final state of one that never ran); one that
// ran shows the state of its digest run's job (migration 0016,
// jobmap.FiringRun).
type Schedules struct{ db *DB }

// NewSchedules returns the schedule store on db.
func NewSchedules(db *DB) *Schedules { return &Schedules{db: db} }

// lockChannel is the advisory lock class serialising creations in a channel.
const lockChannel int32 = 0x64727363 // "drsc"

// CreateSchedule implements schedule.Store.
func (s *Schedules) CreateSchedule(ctx context.Context, sc schedule.Schedule, maxPerChannel int) error {
	db := s.db
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return db.errorf("options: %w", err)
	}
	return db.Tx(ctx, func(q Querier) error {
		if maxPerChannel > 0 {
			if err := db.lock(ctx, q, lockChannel, sc.Channel); err != nil {
				return err
			}
			var n int
			if err := q.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE channel = $1`, sc.Channel).Scan(&n); err != nil {
				return db.errorf("count schedules: %w", err)
			}
			if n >= maxPerChannel {
				return db.errorf("channel %s has %d schedules: %w", sc.Channel, n, schedule.ErrLimit)
			}
		}
		n, err := q.Exec(ctx, `INSERT INTO schedules (id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
			sc.ID, nanos(sc.ActiveSince), nanos(sc.CreatedAt), nanos(sc.UpdatedAt), sc.Enabled, sc.Team, sc.Channel, sc.Owner, sc.Topic, sc.Spec, sc.TZ, string(opts))
		if err != nil {
			return db.errorf("insert schedule: %w", err)
		}
		if n == 0 {
			return db.errorf("schedule %s: %w", sc.ID, schedule.ErrAlreadyExists)
		}
		return nil
	})
}

const scheduleCols = `id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options,
	COALESCE((SELECT max(due) FROM schedule_firings f WHERE f.schedule_id = schedules.id), 0)`

func scanSchedule(row Row) (schedule.Schedule, error) {
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
	sc, err := scanSchedule(s.db.Read().QueryRow(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, s.db.errorf("schedule %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return sc, s.db.errorf("get schedule %s: %w", id, err)
	}
	return sc, nil
}

// UpdateSchedule implements schedule.Store.
func (s *Schedules) UpdateSchedule(ctx context.Context, sc schedule.Schedule) error {
	sc = dbtext.Schedule(sc)
	opts, err := json.Marshal(sc.Options)
	if err != nil {
		return s.db.errorf("options: %w", err)
	}
	return s.db.Write(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `UPDATE schedules SET channel = $1, topic = $2, spec = $3, tz = $4, enabled = $5, options = $6, active_since = $7, updated_at = $8 WHERE id = $9`,
			sc.Channel, sc.Topic, sc.Spec, sc.TZ, sc.Enabled, string(opts), nanos(sc.ActiveSince), nanos(sc.UpdatedAt), sc.ID)
		if err != nil {
			return s.db.errorf("update schedule %s: %w", sc.ID, err)
		}
		if n == 0 {
			return s.db.errorf("schedule %s: %w", sc.ID, schedule.ErrNotFound)
		}
		return nil
	})
}

// DeleteSchedule implements schedule.Store (its firings go by ON DELETE
// CASCADE; the runs of its digests stay, as research runs do).
func (s *Schedules) DeleteSchedule(ctx context.Context, id string) error {
	return s.db.Write(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
		if err != nil {
			return s.db.errorf("delete schedule %s: %w", id, err)
		}
		if n == 0 {
			return s.db.errorf("schedule %s: %w", id, schedule.ErrNotFound)
		}
		return nil
	})
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
	rows, err := s.db.Read().Query(ctx, q+` ORDER BY created_at, id`, args...)
	out, err := collect(rows, err, scanSchedule)
	if err != nil {
		return nil, s.db.errorf("list schedules: %w", err)
	}
	return out, nil
}

// digestJSON is the digest column's value: NULL, or the digest as JSON text.
func (db *DB) digestJSON(d *schedule.Digest) (any, error) {
	if d == nil {
		return nil, nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, db.errorf("digest: %w", err)
	}
	return string(b), nil
}

// RecordFiring implements schedule.Store.
func (s *Schedules) RecordFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	db := s.db
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := db.digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	return writeValue(ctx, db, func(q Querier) (bool, error) {
		n, err := q.Exec(ctx, `INSERT INTO schedule_firings (schedule_id, due, claimed_at, manual, error, digest, state)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, nanos(f.Due), nanos(f.ClaimedAt), f.Manual, f.Error, dg, jobmap.RowState(f.State))
		switch {
		case err != nil && isForeignKeyViolation(err): // the schedule is gone
			return false, db.errorf("schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		case err != nil:
			return false, db.errorf("record firing %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		return n > 0, nil
	})
}

// RecordOutcome implements schedule.Store.
func (s *Schedules) RecordOutcome(ctx context.Context, id string, due time.Time, out schedule.Outcome) error {
	db := s.db
	out = dbtext.Outcome(out)
	dg, err := db.digestJSON(out.Digest)
	if err != nil {
		return err
	}
	return db.Write(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `UPDATE schedule_firings SET error = $1, digest = COALESCE($2, digest) WHERE schedule_id = $3 AND due = $4`,
			out.Error, dg, id, nanos(due))
		if err != nil {
			return db.errorf("record outcome of %s@%s: %w", id, due, err)
		}
		if n == 0 {
			return db.errorf("firing %s@%s: %w", id, due, schedule.ErrNotFound)
		}
		return nil
	})
}

// firingCols and firingFrom read a firing with its run's job, if any: the
// run schedule.RunID(schedule_id, due), due in Unix nanoseconds.
const (
	firingCols = `f.schedule_id, f.due, f.claimed_at, f.manual, f.error, f.digest, f.state,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.finished_at, j.error`
	firingFrom = ` FROM schedule_firings f LEFT JOIN jobs j ON j.kind = 'run'
	AND j.key = 'digest:' || f.schedule_id || '@' || CAST(f.due AS text)`
)

func scanFiring(row Row) (schedule.Firing, error) {
	var f schedule.Firing
	var due, claimed int64
	var rowState string
	var dg, payload []byte
	var state, owner, jerr sql.NullString
	var lease, attempts, finished sql.NullInt64
	if err := row.Scan(&f.ScheduleID, &due, &claimed, &f.Manual, &f.Error, &dg, &rowState,
		&state, &payload, &owner, &lease, &attempts, &finished, &jerr); err != nil {
		return f, err
	}
	f.Due, f.ClaimedAt = fromNanos(due), fromNanos(claimed)
	j := jobs.Job{State: jobs.State(state.String), Payload: payload, Owner: owner.String, Attempts: int(attempts.Int64),
		LeaseUntil: fromNanos(lease.Int64), FinishedAt: fromNanos(finished.Int64), Error: jerr.String}
	jobmap.FiringRun(&f, rowState, j, state.Valid)
	if dg != nil {
		f.Digest = new(schedule.Digest)
		if err := json.Unmarshal(dg, f.Digest); err != nil {
			return f, fmt.Errorf("digest of %s@%s: %w", f.ScheduleID, f.Due, err)
		}
	}
	return f, nil
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.Read().QueryRow(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = $1 AND f.due = $2`, id, nanos(due)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, s.db.errorf("firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, s.db.errorf("get firing %s@%s: %w", id, due, err)
	}
	return f, nil
}

// ListFirings implements schedule.Store.
func (s *Schedules) ListFirings(ctx context.Context, id string, limit int) ([]schedule.Firing, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = $1 ORDER BY f.due DESC LIMIT $2`,
		id, s.db.limit(limit))
	out, err := collect(rows, err, scanFiring)
	if err != nil {
		return nil, s.db.errorf("list firings: %w", err)
	}
	return out, nil
}

// PreviousDigest implements schedule.Store.
func (s *Schedules) PreviousDigest(ctx context.Context, id string, before time.Time) (schedule.Firing, error) {
	f, err := scanFiring(s.db.Read().QueryRow(ctx, `SELECT `+firingCols+firingFrom+`
		WHERE f.schedule_id = $1 AND f.due < $2 AND f.digest IS NOT NULL
		ORDER BY f.due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, s.db.errorf("previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, s.db.errorf("previous digest of %s: %w", id, err)
	}
	return f, nil
}
