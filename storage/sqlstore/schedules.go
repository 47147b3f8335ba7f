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
// error text, the digest) and a KindFiring job (migration 0009) that holds
// its lease and state (jobmap.FiringJob): the lease rules are jobs.go's,
// run inside the transaction that also writes the row.
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

// firingKeyOf is the key of the job of firing row f (jobmap.FiringKey).
const firingKeyOf = `f.schedule_id || '@' || CAST(f.due AS text)`

// DeleteSchedule implements schedule.Store: the jobs of its firings, then
// the schedule (its firings go by ON DELETE CASCADE), in one transaction.
func (s *Schedules) DeleteSchedule(ctx context.Context, id string) error {
	return s.db.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM jobs WHERE kind = 'firing'
			AND key IN (SELECT `+firingKeyOf+` FROM schedule_firings f WHERE f.schedule_id = $1)`, id); err != nil {
			return s.db.errorf("delete firing jobs of %s: %w", id, err)
		}
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

// ClaimFiring implements schedule.Store: the row and the job in one
// transaction; a job left behind by a firing row that is gone is replaced.
func (s *Schedules) ClaimFiring(ctx context.Context, f schedule.Firing) (bool, error) {
	db := s.db
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	dg, err := db.digestJSON(f.Digest)
	if err != nil {
		return false, err
	}
	j, err := jobmap.FiringJob(f, nanos(f.Due))
	if err != nil {
		return false, db.errorf("%w", err)
	}
	var claimed bool
	err = db.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `INSERT INTO schedule_firings (schedule_id, due, claimed_at, manual, error, digest)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (schedule_id, due) DO NOTHING`,
			f.ScheduleID, nanos(f.Due), nanos(f.ClaimedAt), f.Manual, f.Error, dg)
		switch {
		case err != nil && isForeignKeyViolation(err): // the schedule is gone
			return db.errorf("schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
		case err != nil:
			return db.errorf("claim %s@%s: %w", f.ScheduleID, f.Due, err)
		case n == 0:
			return nil
		}
		claimed = true
		stored, err := db.putJobs(ctx, q, []jobs.Job{j})
		if err != nil || stored[0] {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND key = $2`, string(j.Kind), j.Key); err != nil {
			return db.errorf("claim %s@%s: %w", f.ScheduleID, f.Due, err)
		}
		_, err = db.putJobs(ctx, q, []jobs.Job{j})
		return err
	})
	if err != nil {
		return false, err
	}
	return claimed, nil
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
	return s.db.Write(ctx, func(q Querier) error {
		_, err := s.db.extendJob(ctx, q, jobs.KindFiring, jobmap.FiringKey(id, nanos(due)), owner, leaseUntil, 0)
		return leaseErr(err)
	})
}

// FinishFiring implements schedule.Store. A waiting firing has no lease: it
// is finished by whoever finishes it (a decline, or its claimer whose
// request for approval failed), as a job unparked, claimed and finished in
// one transaction.
func (s *Schedules) FinishFiring(ctx context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	db := s.db
	out = dbtext.Outcome(out)
	dg, err := db.digestJSON(out.Digest)
	if err != nil {
		return err
	}
	state, payload, err := jobmap.FiringFinish(out)
	if err != nil {
		return db.errorf("%w", err)
	}
	key := jobmap.FiringKey(id, nanos(due))
	return db.Tx(ctx, func(q Querier) error {
		j, err := db.getJob(ctx, q, jobs.KindFiring, key)
		if err != nil {
			return leaseErr(err)
		}
		if j.State == jobs.Parked {
			if _, err := db.unparkJob(ctx, q, jobs.KindFiring, key, nil, out.FinishedAt); err != nil {
				return leaseErr(err)
			}
			if _, err := db.claimJobKey(ctx, q, jobs.KindFiring, key, owner, out.FinishedAt, 0, 0); err != nil {
				return leaseErr(err)
			}
		}
		if _, err := db.finishJob(ctx, q, jobs.KindFiring, key, owner, state, "", payload, out.FinishedAt); err != nil {
			return leaseErr(err)
		}
		if _, err := q.Exec(ctx, `UPDATE schedule_firings SET error = $1, digest = $2 WHERE schedule_id = $3 AND due = $4`,
			out.Error, dg, id, nanos(due)); err != nil {
			return db.errorf("finish %s@%s: %w", id, due, err)
		}
		return nil
	})
}

// firingCols and firingFrom read a firing with its job.
const (
	firingCols = `f.schedule_id, f.due, f.claimed_at, f.manual, f.error, f.digest,
	j.state, j.payload, j.owner, j.lease_until, j.attempts, j.finished_at, j.error`
	firingFrom = ` FROM schedule_firings f JOIN jobs j ON j.kind = 'firing' AND j.key = ` + firingKeyOf
)

func scanFiring(row Row) (schedule.Firing, error) {
	var f schedule.Firing
	var j jobs.Job
	var due, claimed, lease, finished int64
	var state string
	var dg []byte
	if err := row.Scan(&f.ScheduleID, &due, &claimed, &f.Manual, &f.Error, &dg,
		&state, &j.Payload, &j.Owner, &lease, &j.Attempts, &finished, &j.Error); err != nil {
		return f, err
	}
	f.Due, f.ClaimedAt = fromNanos(due), fromNanos(claimed)
	j.State, j.LeaseUntil, j.FinishedAt = jobs.State(state), fromNanos(lease), fromNanos(finished)
	jobmap.FiringLease(&f, j)
	if dg != nil {
		f.Digest = new(schedule.Digest)
		if err := json.Unmarshal(dg, f.Digest); err != nil {
			return f, fmt.Errorf("digest of %s@%s: %w", f.ScheduleID, f.Due, err)
		}
	}
	return f, nil
}

// getFiring reads one firing on q.
func (db *DB) getFiring(ctx context.Context, q Querier, id string, due int64) (schedule.Firing, error) {
	f, err := scanFiring(q.QueryRow(ctx, `SELECT `+firingCols+firingFrom+` WHERE f.schedule_id = $1 AND f.due = $2`, id, due))
	if errors.Is(err, sql.ErrNoRows) {
		return f, db.errorf("firing %s@%d: %w", id, due, schedule.ErrNotFound)
	}
	if err != nil {
		return f, db.errorf("get firing %s@%d: %w", id, due, err)
	}
	return f, nil
}

// TakeOverFiring implements schedule.Store: Claim with the bound on
// attempts.
func (s *Schedules) TakeOverFiring(ctx context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	db := s.db
	var out []schedule.Firing
	err := db.Tx(ctx, func(q Querier) error {
		out = out[:0]
		got, err := db.claimJobs(ctx, q, jobs.KindFiring, owner, now, leaseUntil.Sub(now), 0, maxAttempts)
		if err != nil {
			return db.errorf("take over: %w", err)
		}
		for _, j := range got {
			id, due, err := jobmap.ParseFiringKey(j.Key)
			if err != nil {
				return db.errorf("take over: %w", err)
			}
			f, err := db.getFiring(ctx, q, id, due)
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
	return writeValue(ctx, s.db, func(q Querier) (int, error) {
		return s.db.failExpiredJobs(ctx, q, jobs.KindFiring, now, maxAttempts, "abandoned: the process running it stopped")
	})
}

// ApproveFiring implements schedule.Store: Unpark, then ClaimKey by the
// approver, in one transaction.
func (s *Schedules) ApproveFiring(ctx context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	db := s.db
	var f schedule.Firing
	key := jobmap.FiringKey(id, nanos(due))
	err := db.Tx(ctx, func(q Querier) error {
		_, err := db.unparkJob(ctx, q, jobs.KindFiring, key, nil, now)
		switch {
		case errors.Is(err, jobs.ErrNotParked):
			return db.errorf("firing %s@%s: %w: %w", id, due, schedule.ErrNotWaiting, err)
		case err != nil:
			return jobmap.ScheduleErr(err)
		}
		if _, err := db.claimJobKey(ctx, q, jobs.KindFiring, key, owner, now, leaseUntil.Sub(now), 0); err != nil {
			return jobmap.ScheduleErr(err)
		}
		f, err = db.getFiring(ctx, q, id, nanos(due))
		return err
	})
	return f, err
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(ctx context.Context, id string, due time.Time) (schedule.Firing, error) {
	return s.db.getFiring(ctx, s.db.Read(), id, nanos(due))
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
		WHERE f.schedule_id = $1 AND f.due < $2 AND j.state = 'done' AND length(j.payload) = 0 AND f.digest IS NOT NULL
		ORDER BY f.due DESC LIMIT 1`, id, nanos(before)))
	if errors.Is(err, sql.ErrNoRows) {
		return f, s.db.errorf("previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return f, s.db.errorf("previous digest of %s: %w", id, err)
	}
	return f, nil
}
