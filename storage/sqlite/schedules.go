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
// IMMEDIATE, so the claim of a firing and the per-channel limit hold across
// processes sharing the file.
//
// A firing is a row of schedule_firings (manual, claimed_at, the outcome's
// error text, the digest) and a KindFiring job (migration 0009) that holds
// its lease and state (jobmap.FiringJob): the lease rules are jobs.go's,
// run inside the transaction that also writes the row.
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE kind = 'firing'
			AND key IN (SELECT schedule_id || '@' || due FROM schedule_firings WHERE schedule_id = ?)`, id); err != nil {
			return fmt.Errorf("sqlite: delete firing jobs of %s: %w", id, err)
		}
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

// ClaimFiring implements schedule.Store: the row and the job in one
// transaction; a job left behind by a firing row that is gone is replaced.
func (s *Schedules) ClaimFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	j, err := jobmap.FiringJob(f, nanos(f.Due))
	if err != nil {
		return false, fmt.Errorf("sqlite: %w", err)
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
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule_id, due, claimed_at, manual, error, digest)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, nanos(f.Due), nanos(f.ClaimedAt), b2i(f.Manual), f.Error, dg)
		if err != nil {
			return fmt.Errorf("sqlite: claim %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		claimed = true
		stored, err := putJobs(ctx, tx, []jobs.Job{j})
		if err != nil || stored[0] {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE kind = ? AND key = ?`, j.Kind, j.Key); err != nil {
			return fmt.Errorf("sqlite: claim %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		_, err = putJobs(ctx, tx, []jobs.Job{j})
		return err
	})
	return claimed, err
}

// leaseErr maps the jobs error of a firing's lease to schedule.ErrLeaseLost
// (also for a firing that does not exist, as a lease nobody holds).
func leaseErr(err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("%w: %w", schedule.ErrLeaseLost, err)
	}
	return jobmap.ScheduleErr(err)
}

// RenewFiring implements schedule.Store: Extend to leaseUntil (which may lie
// in the past: a hand-back).
func (s *Schedules) RenewFiring(ctx context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := extendJob(ctx, tx, jobs.KindFiring, jobmap.FiringKey(id, nanos(due)), owner, leaseUntil, 0)
		return leaseErr(err)
	})
}

// FinishFiring implements schedule.Store. A waiting firing has no lease: it
// is finished by whoever finishes it (a decline, or its claimer whose
// request for approval failed), as a job unparked, claimed and finished in
// one transaction.
func (s *Schedules) FinishFiring(ctx context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	dg, err := digestJSON(out.Digest)
	if err != nil {
		return err
	}
	state, payload, err := jobmap.FiringFinish(out)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	key := jobmap.FiringKey(id, nanos(due))
	return s.tx(ctx, func(tx *sql.Tx) error {
		j, err := getJob(ctx, tx, jobs.KindFiring, key)
		if err != nil {
			return leaseErr(err)
		}
		if j.State == jobs.Parked {
			if _, err := unparkJob(ctx, tx, jobs.KindFiring, key, nil, out.FinishedAt); err != nil {
				return leaseErr(err)
			}
			if _, err := claimJobKey(ctx, tx, jobs.KindFiring, key, owner, out.FinishedAt, 0, 0); err != nil {
				return leaseErr(err)
			}
		}
		if _, err := finishJob(ctx, tx, jobs.KindFiring, key, owner, state, "", payload, out.FinishedAt); err != nil {
			return leaseErr(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schedule_firings SET error = ?, digest = ? WHERE schedule_id = ? AND due = ?`,
			out.Error, dg, id, nanos(due)); err != nil {
			return fmt.Errorf("sqlite: finish %s@%s: %w", id, due, err)
		}
		return nil
	})
}

// firingCols and firingFrom read a firing with its job.
const (
	firingCols = `f.schedule_id, f.due, f.claimed_at, f.manual, f.error, f.digest,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.finished_at, j.error`
	firingFrom = ` FROM schedule_firings f JOIN jobs j ON j.kind = 'firing' AND j.key = f.schedule_id || '@' || f.due`
)

func scanFiring(row interface{ Scan(...any) error }) (schedule.Firing, error) {
	var f schedule.Firing
	var j jobs.Job
	var due, claimed, manual, lease, finished int64
	var dg sql.NullString
	if err := row.Scan(&f.ScheduleID, &due, &claimed, &manual, &f.Error, &dg,
		&j.State, &j.Payload, &j.Owner, &lease, &j.Attempts, &finished, &j.Error); err != nil {
		return f, err
	}
	f.Due, f.ClaimedAt, f.Manual = fromNanos(due), fromNanos(claimed), manual != 0
	j.LeaseUntil, j.FinishedAt = jobTime(lease), jobTime(finished)
	jobmap.FiringLease(&f, j)
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

// getFiring reads one firing on db (a transaction or the writer).
func getFiring(ctx context.Context, db jobRower, id string, due int64) (schedule.Firing, error) {
	f, err := scanFiring(db.QueryRowContext(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = ? AND f.due = ?`, id, due))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlite: firing %s@%d: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: get firing %s@%d: %w", id, due, err)
	}
	return f, nil
}

// TakeOverFiring implements schedule.Store: Claim with the bound on attempts.
func (s *Schedules) TakeOverFiring(ctx context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	var out []schedule.Firing
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		got, err := claimJobs(ctx, tx, jobs.KindFiring, owner, now, leaseUntil.Sub(now), 0, maxAttempts)
		if err != nil {
			return fmt.Errorf("sqlite: take over: %w", err)
		}
		for _, j := range got {
			id, due, err := jobmap.ParseFiringKey(j.Key)
			if err != nil {
				return fmt.Errorf("sqlite: take over: %w", err)
			}
			f, err := getFiring(ctx, tx, id, due)
			if err != nil {
				return fmt.Errorf("take over: %w", err)
			}
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Schedules) FailExpired(ctx context.Context, now time.Time, maxAttempts int) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = failExpiredJobs(ctx, tx, jobs.KindFiring, now, maxAttempts, "abandoned: the process running it stopped")
		return err
	})
	return n, err
}

// ApproveFiring implements schedule.Store: Unpark, then ClaimKey by the
// approver, in one transaction.
func (s *Schedules) ApproveFiring(ctx context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	var f schedule.Firing
	key := jobmap.FiringKey(id, nanos(due))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := unparkJob(ctx, tx, jobs.KindFiring, key, nil, now)
		switch {
		case errors.Is(err, jobs.ErrNotParked):
			return fmt.Errorf("sqlite: firing %s@%s: %w: %w", id, due, schedule.ErrNotWaiting, err)
		case err != nil:
			return jobmap.ScheduleErr(err)
		}
		if _, err := claimJobKey(ctx, tx, jobs.KindFiring, key, owner, now, leaseUntil.Sub(now), 0); err != nil {
			return jobmap.ScheduleErr(err)
		}
		f, err = getFiring(ctx, tx, id, nanos(due))
		return err
	})
	return f, err
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	return getFiring(ctx, s.db, id, nanos(due))
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
		WHERE f.schedule_id = ? AND f.due < ? AND j.state = 'done' AND length(j.payload) = 0 AND f.digest IS NOT NULL
		ORDER BY f.due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: previous digest of %s: %w", id, err)
	}
	return f, nil
}
