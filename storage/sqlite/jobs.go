package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"deepresearch/jobs"
)

// Jobs is jobs.Queue on the Store's file (tables jobs and instances,
// migration 0007). Every change is one statement in one immediate
// transaction on the writer, so changes from all processes on the file
// serialise on SQLite's lock: a claim's select and update see no other
// writer in between, which is what SKIP LOCKED buys on Postgres.
type Jobs struct {
	s *Store
}

var _ jobs.Queue = (*Jobs)(nil)

// NewJobs returns the queue on s's file. It shares s's connections: closing
// s closes it.
func NewJobs(s *Store) *Jobs { return &Jobs{s: s} }

const jobCols = `kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error`

// jobClaimable selects, for parameters :kind, :now and :max, the jobs a
// claimer may take (jobs.Job.Claimable).
const jobClaimable = `kind = :kind AND state IN ('ready', 'held') AND (state = 'ready' OR lease_until < :now)
	AND (:max <= 0 OR attempts < :max)`

func jobNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func jobTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

type jobScanner interface{ Scan(...any) error }

func scanJob(sc jobScanner) (jobs.Job, error) {
	var j jobs.Job
	var lease, created, updated, finished int64
	if err := sc.Scan(&j.Kind, &j.Key, &j.State, &j.Payload, &j.Owner, &lease, &j.Attempts, &created, &updated, &finished, &j.Error); err != nil {
		return jobs.Job{}, err
	}
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	j.LeaseUntil, j.CreatedAt, j.UpdatedAt, j.FinishedAt = jobTime(lease), jobTime(created), jobTime(updated), jobTime(finished)
	return j, nil
}

// jobPayload returns the flag and value of a "nil keeps it" payload.
func jobPayload(p []byte) (int, []byte) {
	if p == nil {
		return 0, []byte{}
	}
	return 1, p
}

// Put implements jobs.Queue.
func (q *Jobs) Put(ctx context.Context, js []jobs.Job) ([]bool, error) {
	js, err := jobs.CheckPut(js)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	stored := make([]bool, len(js))
	if len(js) == 0 {
		return stored, nil
	}
	err = q.s.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO jobs (`+jobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '') ON CONFLICT DO NOTHING`)
		if err != nil {
			return fmt.Errorf("sqlite: put jobs: %w", err)
		}
		defer st.Close()
		for i, j := range js {
			res, err := st.ExecContext(ctx, j.Kind, j.Key, j.State, nonNil(j.Payload), j.Owner, jobNanos(j.LeaseUntil), j.Attempts,
				jobNanos(j.CreatedAt), jobNanos(j.UpdatedAt), jobNanos(j.FinishedAt))
			if err != nil {
				return fmt.Errorf("sqlite: put job %s/%s: %w", j.Kind, j.Key, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlite: put job %s/%s: %w", j.Kind, j.Key, err)
			}
			stored[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// ClaimKey implements jobs.Queue.
func (q *Jobs) ClaimKey(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'held', owner = :owner, lease_until = :until,
			attempts = attempts + 1, updated_at = :now
			WHERE key = :key AND `+jobClaimable+` RETURNING `+jobCols,
			sql.Named("owner", owner), sql.Named("until", jobNanos(now.Add(lease))), sql.Named("now", jobNanos(now)),
			sql.Named("key", key), sql.Named("kind", kind), sql.Named("max", maxAttempts)))
		if errors.Is(err, sql.ErrNoRows) {
			return q.why(ctx, tx, "claim", kind, key, jobs.ErrNotClaimable)
		}
		if err != nil {
			return fmt.Errorf("sqlite: claim %s/%s: %w", kind, key, err)
		}
		return nil
	})
	if err != nil {
		return jobs.Job{}, err
	}
	return got, nil
}

// why returns the error of a conditional change that matched no row:
// ErrNotFound when the job does not exist, otherwise refused.
func (q *Jobs) why(ctx context.Context, tx *sql.Tx, what string, kind jobs.Kind, key string, refused error) error {
	var state, owner string
	err := tx.QueryRowContext(ctx, `SELECT state, owner FROM jobs WHERE kind = ? AND key = ?`, kind, key).Scan(&state, &owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: %s %s/%s: %w", what, kind, key, jobs.ErrNotFound)
	case err != nil:
		return fmt.Errorf("sqlite: %s %s/%s: %w", what, kind, key, err)
	}
	return fmt.Errorf("sqlite: %s %s/%s (%s by %q): %w", what, kind, key, state, owner, refused)
}

// Claim implements jobs.Queue.
func (q *Jobs) Claim(ctx context.Context, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	if limit <= 0 {
		limit = -1
	}
	var got []jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		got = got[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET state = 'held', owner = :owner, lease_until = :until,
			attempts = attempts + 1, updated_at = :now
			WHERE (kind, key) IN (
				SELECT kind, key FROM jobs WHERE `+jobClaimable+` ORDER BY created_at, key LIMIT :limit
			) RETURNING `+jobCols,
			sql.Named("owner", owner), sql.Named("until", jobNanos(now.Add(lease))), sql.Named("now", jobNanos(now)),
			sql.Named("kind", kind), sql.Named("max", maxAttempts), sql.Named("limit", limit))
		if err != nil {
			return fmt.Errorf("sqlite: claim %s: %w", kind, err)
		}
		defer rows.Close()
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return fmt.Errorf("sqlite: claim %s: %w", kind, err)
			}
			got = append(got, j)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: claim %s: %w", kind, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(got, func(a, b int) bool {
		if !got[a].CreatedAt.Equal(got[b].CreatedAt) {
			return got[a].CreatedAt.Before(got[b].CreatedAt)
		}
		return got[a].Key < got[b].Key
	})
	return got, nil
}

// held runs `UPDATE jobs SET <set>` on the job owner holds and returns it
// as updated, or ErrNotFound or ErrLeaseLost. args are set's parameters.
func (q *Jobs) held(ctx context.Context, what string, kind jobs.Kind, key, owner, set string, args ...any) (jobs.Job, error) {
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET `+set+`
			WHERE kind = ? AND key = ? AND state = 'held' AND owner = ? RETURNING `+jobCols,
			append(args, kind, key, owner)...))
		if errors.Is(err, sql.ErrNoRows) {
			return q.why(ctx, tx, what, kind, key, jobs.ErrLeaseLost)
		}
		if err != nil {
			return fmt.Errorf("sqlite: %s %s/%s: %w", what, kind, key, err)
		}
		return nil
	})
	return got, err
}

// Extend implements jobs.Queue.
func (q *Jobs) Extend(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return q.held(ctx, "extend", kind, key, owner, `lease_until = ?, updated_at = ?`, jobNanos(now.Add(lease)), jobNanos(now))
}

// Release implements jobs.Queue.
func (q *Jobs) Release(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time) error {
	_, err := q.held(ctx, "release", kind, key, owner,
		`state = 'ready', owner = '', lease_until = 0, attempts = max(attempts - 1, 1), updated_at = ?`, jobNanos(now))
	return err
}

// Park implements jobs.Queue.
func (q *Jobs) Park(ctx context.Context, kind jobs.Kind, key, owner string, payload []byte, now time.Time) error {
	set, p := jobPayload(payload)
	_, err := q.held(ctx, "park", kind, key, owner,
		`state = 'parked', owner = '', lease_until = 0, payload = CASE WHEN ? THEN ? ELSE payload END, updated_at = ?`,
		set, p, jobNanos(now))
	return err
}

// Unpark implements jobs.Queue.
func (q *Jobs) Unpark(ctx context.Context, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'ready', attempts = 0,
			payload = CASE WHEN ? THEN ? ELSE payload END, updated_at = ?
			WHERE kind = ? AND key = ? AND state = 'parked' RETURNING `+jobCols,
			set, p, jobNanos(now), kind, key))
		if errors.Is(err, sql.ErrNoRows) {
			return q.why(ctx, tx, "unpark", kind, key, jobs.ErrNotParked)
		}
		if err != nil {
			return fmt.Errorf("sqlite: unpark %s/%s: %w", kind, key, err)
		}
		return nil
	})
	if err != nil {
		return jobs.Job{}, err
	}
	return got, nil
}

// Finish implements jobs.Queue.
func (q *Jobs) Finish(ctx context.Context, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) error {
	if err := jobs.CheckFinish(state); err != nil {
		return fmt.Errorf("sqlite: %s/%s: %w", kind, key, err)
	}
	if state != jobs.Failed {
		errText = ""
	}
	set, p := jobPayload(payload)
	_, err := q.held(ctx, "finish", kind, key, owner,
		`state = ?, error = ?, owner = '', lease_until = 0, payload = CASE WHEN ? THEN ? ELSE payload END,
		updated_at = ?, finished_at = ?`,
		state, errText, set, p, jobNanos(now), jobNanos(now))
	return err
}

// Cancel implements jobs.Queue.
func (q *Jobs) Cancel(ctx context.Context, kind jobs.Kind, key, errText string, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, updated_at = ?, finished_at = ?
			WHERE kind = ? AND key = ? AND state IN ('ready', 'parked')`, errText, jobNanos(now), jobNanos(now), kind, key)
		if err != nil {
			return fmt.Errorf("sqlite: cancel %s/%s: %w", kind, key, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return q.why(ctx, tx, "cancel", kind, key, jobs.ErrNotClaimable)
	})
}

// FailExpired implements jobs.Queue.
func (q *Jobs) FailExpired(ctx context.Context, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	if maxAttempts <= 0 {
		return 0, fmt.Errorf("sqlite: fail expired: max attempts %d: %w", maxAttempts, jobs.ErrInvalid)
	}
	var n int64
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, owner = '', lease_until = 0,
			updated_at = ?, finished_at = ?
			WHERE kind = ? AND state = 'held' AND lease_until < ? AND attempts >= ?`,
			errText, jobNanos(now), jobNanos(now), kind, jobNanos(now), maxAttempts)
		if err != nil {
			return fmt.Errorf("sqlite: fail expired %s: %w", kind, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Get implements jobs.Queue.
func (q *Jobs) Get(ctx context.Context, kind jobs.Kind, key string) (jobs.Job, error) {
	j, err := scanJob(q.s.r.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE kind = ? AND key = ?`, kind, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return jobs.Job{}, fmt.Errorf("sqlite: job %s/%s: %w", kind, key, jobs.ErrNotFound)
	case err != nil:
		return jobs.Job{}, fmt.Errorf("sqlite: job %s/%s: %w", kind, key, err)
	}
	return j, nil
}

// Prune implements jobs.Queue.
func (q *Jobs) Prune(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		n = 0
		for _, del := range []string{
			`DELETE FROM jobs WHERE state IN ('done', 'failed') AND finished_at < ?`,
			`DELETE FROM instances WHERE seen_at < ?`,
		} {
			res, err := tx.ExecContext(ctx, del, jobNanos(before))
			if err != nil {
				return fmt.Errorf("sqlite: prune: %w", err)
			}
			m, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlite: prune: %w", err)
			}
			n += m
		}
		return nil
	})
	return int(n), err
}

// TouchInstance implements jobs.Queue.
func (q *Jobs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO instances (id, seen_at) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, jobNanos(now)); err != nil {
			return fmt.Errorf("sqlite: touch instance: %w", err)
		}
		return nil
	})
}

// LiveInstances implements jobs.Queue.
func (q *Jobs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := q.s.r.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE seen_at >= ?`, jobNanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: live instances: %w", err)
	}
	return n, nil
}

// LeaveInstance implements jobs.Queue.
func (q *Jobs) LeaveInstance(ctx context.Context, id string) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: leave instance: %w", err)
		}
		return nil
	})
}
