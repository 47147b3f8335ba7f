package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"deepresearch/jobs"
)

// Jobs is jobs.Queue on the Store's database (tables jobs and instances,
// migration 0007), shared by any number of processes. Every change is one
// statement: Claim locks its candidates with FOR UPDATE SKIP LOCKED, so
// concurrent claimers take disjoint jobs without waiting on each other; the
// other changes are conditional UPDATEs (READ COMMITTED re-checks the
// condition on the latest row version, so of concurrent callers exactly one
// wins).
//
// The lease rules live here once, in unexported functions that run on a
// jobDB: the pool (one statement on its own) or a caller's transaction, so
// that Runs and Schedules change a domain row and its job together.
type Jobs struct {
	s *Store
}

var _ jobs.Queue = (*Jobs)(nil)

// NewJobs returns the queue on s's database. It shares s's pool: closing s
// closes it.
func NewJobs(s *Store) *Jobs { return &Jobs{s: s} }

const jobCols = `kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error`

func jobColsOf(alias string) string {
	return alias + `kind, ` + alias + `key, ` + alias + `state, ` + alias + `payload, ` + alias + `owner, ` +
		alias + `lease_until, ` + alias + `attempts, ` + alias + `created_at, ` + alias + `updated_at, ` +
		alias + `finished_at, ` + alias + `error`
}

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

// jobDB is the pool or a transaction.
type jobDB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanJob(row pgx.Row) (jobs.Job, error) {
	var j jobs.Job
	var kind, state string
	var lease, created, updated, finished int64
	if err := row.Scan(&kind, &j.Key, &state, &j.Payload, &j.Owner, &lease, &j.Attempts, &created, &updated, &finished, &j.Error); err != nil {
		return jobs.Job{}, err
	}
	j.Kind, j.State = jobs.Kind(kind), jobs.State(state)
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	j.LeaseUntil, j.CreatedAt, j.UpdatedAt, j.FinishedAt = jobTime(lease), jobTime(created), jobTime(updated), jobTime(finished)
	return j, nil
}

// Put implements jobs.Queue: one INSERT of unnested arrays; a (kind, key)
// repeated in js is sent once.
func (q *Jobs) Put(ctx context.Context, js []jobs.Job) ([]bool, error) {
	return putJobs(ctx, q.s.pool, js)
}

// putJobs is Put on db.
func putJobs(ctx context.Context, db jobDB, js []jobs.Job) ([]bool, error) {
	js, err := jobs.CheckPut(js)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	stored := make([]bool, len(js))
	if len(js) == 0 {
		return stored, nil
	}
	type kk struct{ kind, key string }
	first := make(map[kk]int, len(js))
	var (
		kinds, keys, states, owners []string
		payloads                    [][]byte
		leases, created, finished   []int64
		attempts                    []int32
	)
	for i, j := range js {
		k := kk{string(j.Kind), j.Key}
		if _, dup := first[k]; dup {
			continue
		}
		first[k] = i
		p := j.Payload
		if p == nil {
			p = []byte{}
		}
		kinds, keys, states, owners = append(kinds, k.kind), append(keys, j.Key), append(states, string(j.State)), append(owners, j.Owner)
		payloads, attempts = append(payloads, p), append(attempts, int32(j.Attempts))
		leases, created, finished = append(leases, jobNanos(j.LeaseUntil)), append(created, jobNanos(j.CreatedAt)), append(finished, jobNanos(j.FinishedAt))
	}
	rows, err := db.Query(ctx, `INSERT INTO jobs (`+jobCols+`)
		SELECT k, y, s, p, o, l, a, c, c, f, ''
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::bigint[], $7::int[], $8::bigint[], $9::bigint[])
			AS x(k, y, s, p, o, l, a, c, f)
		ON CONFLICT DO NOTHING RETURNING kind, key`,
		kinds, keys, states, payloads, owners, leases, attempts, created, finished)
	if err != nil {
		return nil, fmt.Errorf("postgres: put jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k kk
		if err := rows.Scan(&k.kind, &k.key); err != nil {
			return nil, fmt.Errorf("postgres: put jobs: %w", err)
		}
		stored[first[k]] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: put jobs: %w", err)
	}
	return stored, nil
}

// why returns the error of a conditional change that matched no row:
// ErrNotFound when the job does not exist, otherwise refused.
func jobWhy(ctx context.Context, db jobDB, what string, kind jobs.Kind, key string, refused error) error {
	var state, owner string
	err := db.QueryRow(ctx, `SELECT state, owner FROM jobs WHERE kind = $1 AND key = $2`, string(kind), key).Scan(&state, &owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("postgres: %s %s/%s: %w", what, kind, key, jobs.ErrNotFound)
	case err != nil:
		return fmt.Errorf("postgres: %s %s/%s: %w", what, kind, key, err)
	}
	return fmt.Errorf("postgres: %s %s/%s (%s by %q): %w", what, kind, key, state, owner, refused)
}

// one runs a conditional UPDATE … RETURNING of one job and maps "no row" to
// why's error.
func jobOne(ctx context.Context, db jobDB, what string, kind jobs.Kind, key string, refused error, sql string, args ...any) (jobs.Job, error) {
	j, err := scanJob(db.QueryRow(ctx, sql, args...))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return jobs.Job{}, jobWhy(ctx, db, what, kind, key, refused)
	case err != nil:
		return jobs.Job{}, fmt.Errorf("postgres: %s %s/%s: %w", what, kind, key, err)
	}
	return j, nil
}

// jobClaimable selects the jobs a claimer may take (jobs.Job.Claimable);
// $1 is the kind, $3 now, $5 the bound on attempts.
const jobClaimable = `kind = $1 AND state IN ('ready', 'held') AND (state = 'ready' OR lease_until < $3)
	AND ($5::int <= 0 OR attempts < $5::int)`

// ClaimKey implements jobs.Queue.
func (q *Jobs) ClaimKey(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	return claimJobKey(ctx, q.s.pool, kind, key, owner, now, lease, maxAttempts)
}

// claimJobKey is ClaimKey on db.
func claimJobKey(ctx context.Context, db jobDB, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	return jobOne(ctx, db, "claim", kind, key, jobs.ErrNotClaimable, `UPDATE jobs
		SET state = 'held', owner = $2, lease_until = $4, attempts = attempts + 1, updated_at = $3
		WHERE key = $6 AND `+jobClaimable+` RETURNING `+jobCols,
		string(kind), owner, jobNanos(now), jobNanos(now.Add(lease)), maxAttempts, key)
}

// Claim implements jobs.Queue.
func (q *Jobs) Claim(ctx context.Context, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	return claimJobs(ctx, q.s.pool, kind, owner, now, lease, limit, maxAttempts)
}

// claimJobs is Claim on db.
func claimJobs(ctx context.Context, db jobDB, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	return claimJobsOf(ctx, db, kind, nil, owner, now, lease, limit, maxAttempts)
}

// keyKind limits a claim to the keys of one kind of run (research.RunKind):
// those without ':' for "", else those that start with the kind and ':'.
const keyKind = ` AND (($7::text = '' AND strpos(key, ':') = 0) OR ($7::text <> '' AND left(key, length($7::text) + 1) = $7::text || ':'))`

// claimJobsOf is claimJobs limited, when runKind is set, to the keys of
// that kind of run.
func claimJobsOf(ctx context.Context, db jobDB, kind jobs.Kind, runKind *string, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	where := jobClaimable
	args := []any{string(kind), owner, jobNanos(now), jobNanos(now.Add(lease)), maxAttempts, lim}
	if runKind != nil {
		where += keyKind
		args = append(args, *runKind)
	}
	rows, err := db.Query(ctx, `WITH c AS (
			SELECT kind, key FROM jobs WHERE `+where+`
			ORDER BY created_at, key LIMIT $6 FOR UPDATE SKIP LOCKED
		)
		UPDATE jobs j SET state = 'held', owner = $2, lease_until = $4, attempts = j.attempts + 1, updated_at = $3
		FROM c WHERE j.kind = c.kind AND j.key = c.key
		RETURNING `+jobColsOf("j."), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim %s: %w", kind, err)
	}
	defer rows.Close()
	var got []jobs.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim %s: %w", kind, err)
		}
		got = append(got, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim %s: %w", kind, err)
	}
	sort.Slice(got, func(a, b int) bool {
		if !got[a].CreatedAt.Equal(got[b].CreatedAt) {
			return got[a].CreatedAt.Before(got[b].CreatedAt)
		}
		return got[a].Key < got[b].Key
	})
	return got, nil
}

// held runs `UPDATE jobs SET <set>` on the job owner holds and returns it as
// updated, or ErrNotFound or ErrLeaseLost. set's parameters start at $4.
func heldJob(ctx context.Context, db jobDB, what string, kind jobs.Kind, key, owner, set string, args ...any) (jobs.Job, error) {
	return jobOne(ctx, db, what, kind, key, jobs.ErrLeaseLost, `UPDATE jobs SET `+set+`
		WHERE kind = $1 AND key = $2 AND state = 'held' AND owner = $3 RETURNING `+jobCols,
		append([]any{string(kind), key, owner}, args...)...)
}

// jobPayload returns the flag and value of a "nil keeps it" payload.
func jobPayload(p []byte) (bool, []byte) {
	if p == nil {
		return false, []byte{}
	}
	return true, p
}

// extendJob is Extend on db.
func extendJob(ctx context.Context, db jobDB, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return heldJob(ctx, db, "extend", kind, key, owner, `lease_until = $4, updated_at = $5`, jobNanos(now.Add(lease)), jobNanos(now))
}

// releaseJob is Release on db.
func releaseJob(ctx context.Context, db jobDB, kind jobs.Kind, key, owner string, now time.Time) (jobs.Job, error) {
	return heldJob(ctx, db, "release", kind, key, owner,
		`state = 'ready', owner = '', lease_until = 0, attempts = greatest(attempts - 1, 1), updated_at = $4`, jobNanos(now))
}

// parkJob is Park on db.
func parkJob(ctx context.Context, db jobDB, kind jobs.Kind, key, owner string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	return heldJob(ctx, db, "park", kind, key, owner,
		`state = 'parked', owner = '', lease_until = 0, payload = CASE WHEN $4 THEN $5 ELSE payload END, updated_at = $6`,
		set, p, jobNanos(now))
}

// unparkJob is Unpark on db.
func unparkJob(ctx context.Context, db jobDB, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	return jobOne(ctx, db, "unpark", kind, key, jobs.ErrNotParked, `UPDATE jobs
		SET state = 'ready', attempts = 0, payload = CASE WHEN $3 THEN $4 ELSE payload END, updated_at = $5
		WHERE kind = $1 AND key = $2 AND state = 'parked' RETURNING `+jobCols,
		string(kind), key, set, p, jobNanos(now))
}

// finishJob is Finish on db.
func finishJob(ctx context.Context, db jobDB, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) (jobs.Job, error) {
	if err := jobs.CheckFinish(state); err != nil {
		return jobs.Job{}, fmt.Errorf("postgres: %s/%s: %w", kind, key, err)
	}
	if state != jobs.Failed {
		errText = ""
	}
	set, p := jobPayload(payload)
	return heldJob(ctx, db, "finish", kind, key, owner,
		`state = $4, error = $5, owner = '', lease_until = 0, payload = CASE WHEN $6 THEN $7 ELSE payload END,
		updated_at = $8, finished_at = $8`,
		string(state), errText, set, p, jobNanos(now))
}

// Extend implements jobs.Queue.
func (q *Jobs) Extend(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return extendJob(ctx, q.s.pool, kind, key, owner, now, lease)
}

// Release implements jobs.Queue.
func (q *Jobs) Release(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time) error {
	_, err := releaseJob(ctx, q.s.pool, kind, key, owner, now)
	return err
}

// Park implements jobs.Queue.
func (q *Jobs) Park(ctx context.Context, kind jobs.Kind, key, owner string, payload []byte, now time.Time) error {
	_, err := parkJob(ctx, q.s.pool, kind, key, owner, payload, now)
	return err
}

// Unpark implements jobs.Queue.
func (q *Jobs) Unpark(ctx context.Context, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	return unparkJob(ctx, q.s.pool, kind, key, payload, now)
}

// Finish implements jobs.Queue.
func (q *Jobs) Finish(ctx context.Context, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) error {
	_, err := finishJob(ctx, q.s.pool, kind, key, owner, state, errText, payload, now)
	return err
}

// Cancel implements jobs.Queue.
func (q *Jobs) Cancel(ctx context.Context, kind jobs.Kind, key, errText string, now time.Time) error {
	return cancelJob(ctx, q.s.pool, kind, key, errText, nil, now)
}

// cancelJob is Cancel on db, with a payload (nil keeps it) as Finish has.
func cancelJob(ctx context.Context, db jobDB, kind jobs.Kind, key, errText string, payload []byte, now time.Time) error {
	set, p := jobPayload(payload)
	tag, err := db.Exec(ctx, `UPDATE jobs SET state = 'failed', error = $3, updated_at = $4, finished_at = $4,
			payload = CASE WHEN $5 THEN $6 ELSE payload END
		WHERE kind = $1 AND key = $2 AND state IN ('ready', 'parked')`, string(kind), key, errText, jobNanos(now), set, p)
	if err != nil {
		return fmt.Errorf("postgres: cancel %s/%s: %w", kind, key, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return jobWhy(ctx, db, "cancel", kind, key, jobs.ErrNotClaimable)
}

// FailExpired implements jobs.Queue.
func (q *Jobs) FailExpired(ctx context.Context, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	return failExpiredJobs(ctx, q.s.pool, kind, now, maxAttempts, errText)
}

// failExpiredJobs is FailExpired on db.
func failExpiredJobs(ctx context.Context, db jobDB, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	if maxAttempts <= 0 {
		return 0, fmt.Errorf("postgres: fail expired: max attempts %d: %w", maxAttempts, jobs.ErrInvalid)
	}
	tag, err := db.Exec(ctx, `UPDATE jobs SET state = 'failed', error = $4, owner = '', lease_until = 0,
			updated_at = $2, finished_at = $2
		WHERE kind = $1 AND state = 'held' AND lease_until < $2 AND attempts >= $3`,
		string(kind), jobNanos(now), maxAttempts, errText)
	if err != nil {
		return 0, fmt.Errorf("postgres: fail expired %s: %w", kind, err)
	}
	return int(tag.RowsAffected()), nil
}

// Get implements jobs.Queue.
func (q *Jobs) Get(ctx context.Context, kind jobs.Kind, key string) (jobs.Job, error) {
	return getJob(ctx, q.s.pool, kind, key)
}

// getJob is Get on db.
func getJob(ctx context.Context, db jobDB, kind jobs.Kind, key string) (jobs.Job, error) {
	j, err := scanJob(db.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE kind = $1 AND key = $2`, string(kind), key))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return jobs.Job{}, fmt.Errorf("postgres: job %s/%s: %w", kind, key, jobs.ErrNotFound)
	case err != nil:
		return jobs.Job{}, fmt.Errorf("postgres: job %s/%s: %w", kind, key, err)
	}
	return j, nil
}

// Prune implements jobs.Queue: one statement deletes from both tables.
func (q *Jobs) Prune(ctx context.Context, before time.Time) (int, error) {
	return pruneJobs(ctx, q.s.pool, before)
}

// pruneJobs is Prune on db, of the given kinds only when there are any.
func pruneJobs(ctx context.Context, db jobDB, before time.Time, kinds ...jobs.Kind) (int, error) {
	ks := []string{} // not nil: NULL would match no kind
	for _, k := range kinds {
		ks = append(ks, string(k))
	}
	var n int64
	err := db.QueryRow(ctx, `WITH j AS (
			DELETE FROM jobs WHERE state IN ('done', 'failed') AND finished_at < $1
				AND (cardinality($2::text[]) = 0 OR kind = ANY ($2::text[])) RETURNING 1
		), i AS (
			DELETE FROM instances WHERE seen_at < $1 RETURNING 1
		)
		SELECT (SELECT count(*) FROM j) + (SELECT count(*) FROM i)`, jobNanos(before), ks).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune: %w", err)
	}
	return int(n), nil
}

// touchInstance is TouchInstance on db.
func touchInstance(ctx context.Context, db jobDB, id string, now time.Time) error {
	if _, err := db.Exec(ctx, `INSERT INTO instances (id, seen_at) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, jobNanos(now)); err != nil {
		return fmt.Errorf("postgres: touch instance: %w", err)
	}
	return nil
}

// liveInstances is LiveInstances on db.
func liveInstances(ctx context.Context, db jobDB, since time.Time) (int, error) {
	var n int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM instances WHERE seen_at >= $1`, jobNanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: live instances: %w", err)
	}
	return int(n), nil
}

// leaveInstance is LeaveInstance on db.
func leaveInstance(ctx context.Context, db jobDB, id string) error {
	if _, err := db.Exec(ctx, `DELETE FROM instances WHERE id = $1`, id); err != nil {
		return fmt.Errorf("postgres: leave instance: %w", err)
	}
	return nil
}

// TouchInstance implements jobs.Queue.
func (q *Jobs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return touchInstance(ctx, q.s.pool, id, now)
}

// LiveInstances implements jobs.Queue.
func (q *Jobs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	return liveInstances(ctx, q.s.pool, since)
}

// LeaveInstance implements jobs.Queue.
func (q *Jobs) LeaveInstance(ctx context.Context, id string) error {
	return leaveInstance(ctx, q.s.pool, id)
}
