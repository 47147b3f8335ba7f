package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"deepresearch/jobs"
)

// Jobs is jobs.Queue on the Store's file (tables jobs and instances,
// migration 0007). Every change is one statement in one immediate
// transaction on the writer, so changes from all processes on the file
// serialise on SQLite's lock: a claim's select and update see no other
// writer in between, which is what SKIP LOCKED buys on Postgres.
//
// The lease rules live here once, in unexported functions that run in a
// caller's transaction: the Jobs methods wrap each in its own, and Runs and
// Schedules call them inside theirs, so that a domain row and its job change
// together.
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

// jobRower is a *sql.Tx or the reader *sql.DB.
type jobRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// putJobs is Put inside tx.
func putJobs(ctx context.Context, tx *sql.Tx, js []jobs.Job) ([]bool, error) {
	js, err := jobs.CheckPut(js)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	stored := make([]bool, len(js))
	if len(js) == 0 {
		return stored, nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO jobs (`+jobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '') ON CONFLICT DO NOTHING`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: put jobs: %w", err)
	}
	defer st.Close()
	for i, j := range js {
		res, err := st.ExecContext(ctx, j.Kind, j.Key, j.State, nonNil(j.Payload), j.Owner, jobNanos(j.LeaseUntil), j.Attempts,
			jobNanos(j.CreatedAt), jobNanos(j.UpdatedAt), jobNanos(j.FinishedAt))
		if err != nil {
			return nil, fmt.Errorf("sqlite: put job %s/%s: %w", j.Kind, j.Key, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("sqlite: put job %s/%s: %w", j.Kind, j.Key, err)
		}
		stored[i] = n == 1
	}
	return stored, nil
}

// Put implements jobs.Queue.
func (q *Jobs) Put(ctx context.Context, js []jobs.Job) ([]bool, error) {
	var stored []bool
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		stored, err = putJobs(ctx, tx, js)
		return err
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// claimJobKey is ClaimKey inside tx.
func claimJobKey(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	got, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'held', owner = :owner, lease_until = :until,
		attempts = attempts + 1, updated_at = :now
		WHERE key = :key AND `+jobClaimable+` RETURNING `+jobCols,
		sql.Named("owner", owner), sql.Named("until", jobNanos(now.Add(lease))), sql.Named("now", jobNanos(now)),
		sql.Named("key", key), sql.Named("kind", kind), sql.Named("max", maxAttempts)))
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, jobWhy(ctx, tx, "claim", kind, key, jobs.ErrNotClaimable)
	}
	if err != nil {
		return jobs.Job{}, fmt.Errorf("sqlite: claim %s/%s: %w", kind, key, err)
	}
	return got, nil
}

// ClaimKey implements jobs.Queue.
func (q *Jobs) ClaimKey(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = claimJobKey(ctx, tx, kind, key, owner, now, lease, maxAttempts)
		return err
	})
	if err != nil {
		return jobs.Job{}, err
	}
	return got, nil
}

// jobWhy returns the error of a conditional change that matched no row:
// ErrNotFound when the job does not exist, otherwise refused.
func jobWhy(ctx context.Context, tx *sql.Tx, what string, kind jobs.Kind, key string, refused error) error {
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

// claimJobs is Claim inside tx.
func claimJobs(ctx context.Context, tx *sql.Tx, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	return claimJobsOf(ctx, tx, kind, nil, owner, now, lease, limit, maxAttempts)
}

// keyKind limits a claim to the keys of one kind of run (research.RunKind):
// those without ':' for "", else those that start with the kind and ':'.
const keyKind = ` AND ((:rkind = '' AND instr(key, ':') = 0) OR (:rkind <> '' AND substr(key, 1, length(:rkind) + 1) = :rkind || ':'))`

// claimJobsOf is claimJobs limited, when runKind is set, to the keys of
// that kind of run.
func claimJobsOf(ctx context.Context, tx *sql.Tx, kind jobs.Kind, runKind *string, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	if limit <= 0 {
		limit = -1
	}
	where, rkind := jobClaimable, ""
	if runKind != nil {
		where, rkind = where+keyKind, *runKind
	}
	rows, err := tx.QueryContext(ctx, `UPDATE jobs SET state = 'held', owner = :owner, lease_until = :until,
		attempts = attempts + 1, updated_at = :now
		WHERE (kind, key) IN (
			SELECT kind, key FROM jobs WHERE `+where+` ORDER BY created_at, key LIMIT :limit
		) RETURNING `+jobCols,
		sql.Named("owner", owner), sql.Named("until", jobNanos(now.Add(lease))), sql.Named("now", jobNanos(now)),
		sql.Named("kind", kind), sql.Named("max", maxAttempts), sql.Named("limit", limit), sql.Named("rkind", rkind))
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim %s: %w", kind, err)
	}
	defer rows.Close()
	var got []jobs.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim %s: %w", kind, err)
		}
		got = append(got, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: claim %s: %w", kind, err)
	}
	sort.Slice(got, func(a, b int) bool {
		if !got[a].CreatedAt.Equal(got[b].CreatedAt) {
			return got[a].CreatedAt.Before(got[b].CreatedAt)
		}
		return got[a].Key < got[b].Key
	})
	return got, nil
}

// Claim implements jobs.Queue.
func (q *Jobs) Claim(ctx context.Context, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	var got []jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = claimJobs(ctx, tx, kind, owner, now, lease, limit, maxAttempts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// heldJob runs `UPDATE jobs SET <set>` inside tx on the job owner holds and
// returns it as updated, or ErrNotFound or ErrLeaseLost. args are set's
// parameters.
func heldJob(ctx context.Context, tx *sql.Tx, what string, kind jobs.Kind, key, owner, set string, args ...any) (jobs.Job, error) {
	got, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET `+set+`
		WHERE kind = ? AND key = ? AND state = 'held' AND owner = ? RETURNING `+jobCols,
		append(args, kind, key, owner)...))
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, jobWhy(ctx, tx, what, kind, key, jobs.ErrLeaseLost)
	}
	if err != nil {
		return jobs.Job{}, fmt.Errorf("sqlite: %s %s/%s: %w", what, kind, key, err)
	}
	return got, nil
}

// extendJob is Extend inside tx.
func extendJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return heldJob(ctx, tx, "extend", kind, key, owner, `lease_until = ?, updated_at = ?`, jobNanos(now.Add(lease)), jobNanos(now))
}

// releaseJob is Release inside tx.
func releaseJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, owner string, now time.Time) (jobs.Job, error) {
	return heldJob(ctx, tx, "release", kind, key, owner,
		`state = 'ready', owner = '', lease_until = 0, attempts = max(attempts - 1, 1), updated_at = ?`, jobNanos(now))
}

// parkJob is Park inside tx.
func parkJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, owner string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	return heldJob(ctx, tx, "park", kind, key, owner,
		`state = 'parked', owner = '', lease_until = 0, payload = CASE WHEN ? THEN ? ELSE payload END, updated_at = ?`,
		set, p, jobNanos(now))
}

// finishJob is Finish inside tx.
func finishJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) (jobs.Job, error) {
	if err := jobs.CheckFinish(state); err != nil {
		return jobs.Job{}, fmt.Errorf("sqlite: %s/%s: %w", kind, key, err)
	}
	if state != jobs.Failed {
		errText = ""
	}
	set, p := jobPayload(payload)
	return heldJob(ctx, tx, "finish", kind, key, owner,
		`state = ?, error = ?, owner = '', lease_until = 0, payload = CASE WHEN ? THEN ? ELSE payload END,
		updated_at = ?, finished_at = ?`,
		state, errText, set, p, jobNanos(now), jobNanos(now))
}

// Extend implements jobs.Queue.
func (q *Jobs) Extend(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = extendJob(ctx, tx, kind, key, owner, now, lease)
		return err
	})
	return got, err
}

// Release implements jobs.Queue.
func (q *Jobs) Release(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		_, err := releaseJob(ctx, tx, kind, key, owner, now)
		return err
	})
}

// Park implements jobs.Queue.
func (q *Jobs) Park(ctx context.Context, kind jobs.Kind, key, owner string, payload []byte, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		_, err := parkJob(ctx, tx, kind, key, owner, payload, now)
		return err
	})
}

// unparkJob is Unpark inside tx.
func unparkJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	got, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'ready', attempts = 0,
		payload = CASE WHEN ? THEN ? ELSE payload END, updated_at = ?
		WHERE kind = ? AND key = ? AND state = 'parked' RETURNING `+jobCols,
		set, p, jobNanos(now), kind, key))
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, jobWhy(ctx, tx, "unpark", kind, key, jobs.ErrNotParked)
	}
	if err != nil {
		return jobs.Job{}, fmt.Errorf("sqlite: unpark %s/%s: %w", kind, key, err)
	}
	return got, nil
}

// Unpark implements jobs.Queue.
func (q *Jobs) Unpark(ctx context.Context, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	var got jobs.Job
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = unparkJob(ctx, tx, kind, key, payload, now)
		return err
	})
	if err != nil {
		return jobs.Job{}, err
	}
	return got, nil
}

// Finish implements jobs.Queue.
func (q *Jobs) Finish(ctx context.Context, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error {
		_, err := finishJob(ctx, tx, kind, key, owner, state, errText, payload, now)
		return err
	})
}

// cancelJob is Cancel inside tx, with a payload (nil keeps it) as Finish
// has.
func cancelJob(ctx context.Context, tx *sql.Tx, kind jobs.Kind, key, errText string, payload []byte, now time.Time) error {
	set, p := jobPayload(payload)
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, updated_at = ?, finished_at = ?,
		payload = CASE WHEN ? THEN ? ELSE payload END
		WHERE kind = ? AND key = ? AND state IN ('ready', 'parked')`, errText, jobNanos(now), jobNanos(now), set, p, kind, key)
	if err != nil {
		return fmt.Errorf("sqlite: cancel %s/%s: %w", kind, key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return jobWhy(ctx, tx, "cancel", kind, key, jobs.ErrNotClaimable)
}

// Cancel implements jobs.Queue.
func (q *Jobs) Cancel(ctx context.Context, kind jobs.Kind, key, errText string, now time.Time) error {
	return q.s.write(ctx, func(tx *sql.Tx) error { return cancelJob(ctx, tx, kind, key, errText, nil, now) })
}

// failExpiredJobs is FailExpired inside tx.
func failExpiredJobs(ctx context.Context, tx *sql.Tx, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	if maxAttempts <= 0 {
		return 0, fmt.Errorf("sqlite: fail expired: max attempts %d: %w", maxAttempts, jobs.ErrInvalid)
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, owner = '', lease_until = 0,
		updated_at = ?, finished_at = ?
		WHERE kind = ? AND state = 'held' AND lease_until < ? AND attempts >= ?`,
		errText, jobNanos(now), jobNanos(now), kind, jobNanos(now), maxAttempts)
	if err != nil {
		return 0, fmt.Errorf("sqlite: fail expired %s: %w", kind, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// FailExpired implements jobs.Queue.
func (q *Jobs) FailExpired(ctx context.Context, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	var n int
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = failExpiredJobs(ctx, tx, kind, now, maxAttempts, errText)
		return err
	})
	return n, err
}

// getJob is Get on db (a transaction or the readers).
func getJob(ctx context.Context, db jobRower, kind jobs.Kind, key string) (jobs.Job, error) {
	j, err := scanJob(db.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE kind = ? AND key = ?`, kind, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return jobs.Job{}, fmt.Errorf("sqlite: job %s/%s: %w", kind, key, jobs.ErrNotFound)
	case err != nil:
		return jobs.Job{}, fmt.Errorf("sqlite: job %s/%s: %w", kind, key, err)
	}
	return j, nil
}

// Get implements jobs.Queue.
func (q *Jobs) Get(ctx context.Context, kind jobs.Kind, key string) (jobs.Job, error) {
	return getJob(ctx, q.s.r, kind, key)
}

// pruneJobs is Prune inside tx, of the given kinds only when there are any.
func pruneJobs(ctx context.Context, tx *sql.Tx, before time.Time, kinds ...jobs.Kind) (int, error) {
	del := `DELETE FROM jobs WHERE state IN ('done', 'failed') AND finished_at < ?`
	args := []any{jobNanos(before)}
	if len(kinds) > 0 {
		del += ` AND kind IN (?` + strings.Repeat(`, ?`, len(kinds)-1) + `)`
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	var n int64
	for _, q := range []struct {
		sql  string
		args []any
	}{{del, args}, {`DELETE FROM instances WHERE seen_at < ?`, args[:1]}} {
		res, err := tx.ExecContext(ctx, q.sql, q.args...)
		if err != nil {
			return 0, fmt.Errorf("sqlite: prune: %w", err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("sqlite: prune: %w", err)
		}
		n += m
	}
	return int(n), nil
}

// Prune implements jobs.Queue.
func (q *Jobs) Prune(ctx context.Context, before time.Time) (int, error) {
	var n int
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = pruneJobs(ctx, tx, before)
		return err
	})
	return n, err
}

// touchInstance is TouchInstance on the writer.
func touchInstance(ctx context.Context, s *Store, id string, now time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO instances (id, seen_at) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, jobNanos(now)); err != nil {
			return fmt.Errorf("sqlite: touch instance: %w", err)
		}
		return nil
	})
}

// liveInstances is LiveInstances on the readers.
func liveInstances(ctx context.Context, s *Store, since time.Time) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE seen_at >= ?`, jobNanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: live instances: %w", err)
	}
	return n, nil
}

// leaveInstance is LeaveInstance on the writer.
func leaveInstance(ctx context.Context, s *Store, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: leave instance: %w", err)
		}
		return nil
	})
}

// TouchInstance implements jobs.Queue.
func (q *Jobs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return touchInstance(ctx, q.s, id, now)
}

// LiveInstances implements jobs.Queue.
func (q *Jobs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	return liveInstances(ctx, q.s, since)
}

// LeaveInstance implements jobs.Queue.
func (q *Jobs) LeaveInstance(ctx context.Context, id string) error {
	return leaveInstance(ctx, q.s, id)
}
