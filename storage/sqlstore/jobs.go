package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"deepresearch/jobs"
)

// Jobs is jobs.Queue on a DB (tables jobs and instances, migration 0007).
// A claim of several jobs is one statement on PostgreSQL that locks its
// candidates with FOR UPDATE SKIP LOCKED, so concurrent claimers take
// disjoint jobs without waiting on each other; on SQLite the select and
// the update run in one immediate transaction, which is what SKIP LOCKED
// buys. Every other change is one conditional UPDATE (PostgreSQL's READ
// COMMITTED re-checks the condition on the latest row version, so exactly
// one of concurrent callers wins).
//
// The lease rules live here once, in unexported functions that run on a
// Querier: Jobs runs each on its own (DB.Write), and Runs and Schedules
// call them inside their transactions, so that a domain row and its job
// change together.
type Jobs struct{ instances }

var _ jobs.Queue = (*Jobs)(nil)

// NewJobs returns the queue on db.
func NewJobs(db *DB) *Jobs { return &Jobs{instances{db}} }

const jobCols = `kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error`

// jobClaimable selects the jobs a claimer may take (jobs.Job.Claimable);
// $1 is the kind, $3 now, $5 the bound on attempts.
const jobClaimable = `kind = $1 AND state IN ('ready', 'held') AND (state = 'ready' OR lease_until < $3)
	AND ($5 <= 0 OR attempts < $5)`

func scanJob(sc Row) (jobs.Job, error) {
	var j jobs.Job
	var kind, state string
	var lease, created, updated, finished int64
	if err := sc.Scan(&kind, &j.Key, &state, &j.Payload, &j.Owner, &lease, &j.Attempts, &created, &updated, &finished, &j.Error); err != nil {
		return jobs.Job{}, err
	}
	j.Kind, j.State = jobs.Kind(kind), jobs.State(state)
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	j.LeaseUntil, j.CreatedAt, j.UpdatedAt, j.FinishedAt = fromNanos(lease), fromNanos(created), fromNanos(updated), fromNanos(finished)
	return j, nil
}

// jobPayload returns the flag and value of a "nil keeps it" payload.
func jobPayload(p []byte) (bool, []byte) {
	if p == nil {
		return false, []byte{}
	}
	return true, p
}

// putJobs is Put on q: on PostgreSQL one INSERT of unnested arrays (a
// (kind, key) repeated in js is sent once), on SQLite one prepared INSERT
// per job.
func (db *DB) putJobs(ctx context.Context, q Querier, js []jobs.Job) ([]bool, error) {
	js, err := jobs.CheckPut(js)
	if err != nil {
		return nil, db.errorf("%w", err)
	}
	stored := make([]bool, len(js))
	if len(js) == 0 {
		return stored, nil
	}
	if db.engine == Postgres {
		err = putJobsArrays(ctx, q, js, stored)
	} else {
		err = putJobsEach(ctx, q, js, stored)
	}
	if err != nil {
		return nil, db.errorf("put jobs: %w", err)
	}
	return stored, nil
}

// putJobsEach inserts js one statement each, marking those stored.
func putJobsEach(ctx context.Context, q Querier, js []jobs.Job, stored []bool) error {
	for i, j := range js {
		n, err := q.Exec(ctx, `INSERT INTO jobs (`+jobCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '') ON CONFLICT DO NOTHING`,
			string(j.Kind), j.Key, string(j.State), nonNil(j.Payload), j.Owner, nanos(j.LeaseUntil), j.Attempts,
			nanos(j.CreatedAt), nanos(j.UpdatedAt), nanos(j.FinishedAt))
		if err != nil {
			return fmt.Errorf("job %s/%s: %w", j.Kind, j.Key, err)
		}
		stored[i] = n == 1
	}
	return nil
}

// putJobsArrays inserts js in one statement of unnested arrays, marking
// those stored (PostgreSQL).
func putJobsArrays(ctx context.Context, q Querier, js []jobs.Job, stored []bool) error {
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
		kinds, keys, states, owners = append(kinds, k.kind), append(keys, j.Key), append(states, string(j.State)), append(owners, j.Owner)
		payloads, attempts = append(payloads, nonNil(j.Payload)), append(attempts, int32(j.Attempts))
		leases, created, finished = append(leases, nanos(j.LeaseUntil)), append(created, nanos(j.CreatedAt)), append(finished, nanos(j.FinishedAt))
	}
	rows, err := q.Query(ctx, `INSERT INTO jobs (`+jobCols+`)
		SELECT k, y, s, p, o, l, a, c, c, f, ''
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::bigint[], $7::int[], $8::bigint[], $9::bigint[])
			AS x(k, y, s, p, o, l, a, c, f)
		ON CONFLICT DO NOTHING RETURNING kind, key`,
		kinds, keys, states, payloads, owners, leases, attempts, created, finished)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k kk
		if err := rows.Scan(&k.kind, &k.key); err != nil {
			return err
		}
		stored[first[k]] = true
	}
	return rows.Err()
}

// Put implements jobs.Queue.
func (q *Jobs) Put(ctx context.Context, js []jobs.Job) ([]bool, error) {
	return writeValue(ctx, q.db, func(tx Querier) ([]bool, error) {
		return q.db.putJobs(ctx, tx, js)
	})
}

// jobWhy returns the error of a conditional change that matched no row:
// ErrNotFound when the job does not exist, otherwise refused.
func (db *DB) jobWhy(ctx context.Context, q Querier, what string, kind jobs.Kind, key string, refused error) error {
	var state, owner string
	err := q.QueryRow(ctx, `SELECT state, owner FROM jobs WHERE kind = $1 AND key = $2`, string(kind), key).Scan(&state, &owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return db.errorf("%s %s/%s: %w", what, kind, key, jobs.ErrNotFound)
	case err != nil:
		return db.errorf("%s %s/%s: %w", what, kind, key, err)
	}
	return db.errorf("%s %s/%s (%s by %q): %w", what, kind, key, state, owner, refused)
}

// jobOne runs a conditional UPDATE … RETURNING of one job and maps "no row"
// to jobWhy's error.
func (db *DB) jobOne(ctx context.Context, q Querier, what string, kind jobs.Kind, key string, refused error, query string, args ...any) (jobs.Job, error) {
	j, err := scanJob(q.QueryRow(ctx, query, args...))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return jobs.Job{}, db.jobWhy(ctx, q, what, kind, key, refused)
	case err != nil:
		return jobs.Job{}, db.errorf("%s %s/%s: %w", what, kind, key, err)
	}
	return j, nil
}

// claimJobKey is ClaimKey on q.
func (db *DB) claimJobKey(ctx context.Context, q Querier, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	return db.jobOne(ctx, q, "claim", kind, key, jobs.ErrNotClaimable, `UPDATE jobs
		SET state = 'held', owner = $2, lease_until = $4, attempts = attempts + 1, updated_at = $3
		WHERE key = $6 AND `+jobClaimable+` RETURNING `+jobCols,
		string(kind), owner, nanos(now), nanos(now.Add(lease)), maxAttempts, key)
}

// ClaimKey implements jobs.Queue.
func (q *Jobs) ClaimKey(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	return writeValue(ctx, q.db, func(tx Querier) (jobs.Job, error) {
		return q.db.claimJobKey(ctx, tx, kind, key, owner, now, lease, maxAttempts)
	})
}

// claimJobs is Claim on q, oldest first.
func (db *DB) claimJobs(ctx context.Context, q Querier, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	return db.claimJobsOf(ctx, q, kind, nil, owner, now, lease, limit, maxAttempts)
}

// keyKind limits a claim to the keys of one kind of run (research.RunKind,
// $7): those without ':' for "", else those that start with the kind and
// ':'.
const keyKind = ` AND ((CAST($7 AS TEXT) = '' AND key NOT LIKE '%:%')
	OR (CAST($7 AS TEXT) <> '' AND substr(key, 1, length(CAST($7 AS TEXT)) + 1) = CAST($7 AS TEXT) || ':'))`

// claimJobsOf is claimJobs limited, when runKind is set, to the keys of
// that kind of run.
func (db *DB) claimJobsOf(ctx context.Context, q Querier, kind jobs.Kind, runKind *string, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	where := jobClaimable
	args := []any{string(kind), owner, nanos(now), nanos(now.Add(lease)), maxAttempts, db.limit(limit)}
	if runKind != nil {
		where += keyKind
		args = append(args, *runKind)
	}
	rows, err := q.Query(ctx, db.pick(`UPDATE jobs SET state = 'held', owner = $2, lease_until = $4, attempts = attempts + 1, updated_at = $3
		WHERE (kind, key) IN (
			SELECT kind, key FROM jobs WHERE `+where+` ORDER BY created_at, key LIMIT $6
		) RETURNING `+jobCols, `WITH c AS (
			SELECT kind, key FROM jobs WHERE `+where+`
			ORDER BY created_at, key LIMIT $6 FOR UPDATE SKIP LOCKED
		)
		UPDATE jobs j SET state = 'held', owner = $2, lease_until = $4, attempts = j.attempts + 1, updated_at = $3
		FROM c WHERE j.kind = c.kind AND j.key = c.key
		RETURNING j.kind, j.key, j.state, j.payload, j.owner, j.lease_until, j.attempts, j.created_at, j.updated_at, j.finished_at, j.error`),
		args...)
	got, err := collect(rows, err, scanJob)
	if err != nil {
		return nil, db.errorf("claim %s: %w", kind, err)
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
	return writeValue(ctx, q.db, func(tx Querier) ([]jobs.Job, error) {
		return q.db.claimJobs(ctx, tx, kind, owner, now, lease, limit, maxAttempts)
	})
}

// heldJob runs `UPDATE jobs SET <set>` on the job owner holds and returns it
// as updated, or ErrNotFound or ErrLeaseLost. set's parameters start at $4.
func (db *DB) heldJob(ctx context.Context, q Querier, what string, kind jobs.Kind, key, owner, set string, args ...any) (jobs.Job, error) {
	return db.jobOne(ctx, q, what, kind, key, jobs.ErrLeaseLost, `UPDATE jobs SET `+set+`
		WHERE kind = $1 AND key = $2 AND state = 'held' AND owner = $3 RETURNING `+jobCols,
		append([]any{string(kind), key, owner}, args...)...)
}

// extendJob is Extend on q.
func (db *DB) extendJob(ctx context.Context, q Querier, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return db.heldJob(ctx, q, "extend", kind, key, owner, `lease_until = $4, updated_at = $5`, nanos(now.Add(lease)), nanos(now))
}

// releaseJob is Release on q.
func (db *DB) releaseJob(ctx context.Context, q Querier, kind jobs.Kind, key, owner string, now time.Time) (jobs.Job, error) {
	return db.heldJob(ctx, q, "release", kind, key, owner,
		`state = 'ready', owner = '', lease_until = 0, attempts = `+db.pick("max", "greatest")+`(attempts - 1, 1), updated_at = $4`, nanos(now))
}

// parkJob is Park on q.
func (db *DB) parkJob(ctx context.Context, q Querier, kind jobs.Kind, key, owner string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	return db.heldJob(ctx, q, "park", kind, key, owner,
		`state = 'parked', owner = '', lease_until = 0, payload = CASE WHEN $4 THEN $5 ELSE payload END, updated_at = $6`,
		set, p, nanos(now))
}

// unparkJob is Unpark on q.
func (db *DB) unparkJob(ctx context.Context, q Querier, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	set, p := jobPayload(payload)
	return db.jobOne(ctx, q, "unpark", kind, key, jobs.ErrNotParked, `UPDATE jobs
		SET state = 'ready', attempts = 0, payload = CASE WHEN $3 THEN $4 ELSE payload END, updated_at = $5
		WHERE kind = $1 AND key = $2 AND state = 'parked' RETURNING `+jobCols,
		string(kind), key, set, p, nanos(now))
}

// finishJob is Finish on q.
func (db *DB) finishJob(ctx context.Context, q Querier, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) (jobs.Job, error) {
	if err := jobs.CheckFinish(state); err != nil {
		return jobs.Job{}, db.errorf("%s/%s: %w", kind, key, err)
	}
	if state != jobs.Failed {
		errText = ""
	}
	set, p := jobPayload(payload)
	return db.heldJob(ctx, q, "finish", kind, key, owner,
		`state = $4, error = $5, owner = '', lease_until = 0, payload = CASE WHEN $6 THEN $7 ELSE payload END,
		updated_at = $8, finished_at = $8`,
		string(state), errText, set, p, nanos(now))
}

// Extend implements jobs.Queue.
func (q *Jobs) Extend(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	return writeValue(ctx, q.db, func(tx Querier) (jobs.Job, error) {
		return q.db.extendJob(ctx, tx, kind, key, owner, now, lease)
	})
}

// Release implements jobs.Queue.
func (q *Jobs) Release(ctx context.Context, kind jobs.Kind, key, owner string, now time.Time) error {
	return q.db.Write(ctx, func(tx Querier) error {
		_, err := q.db.releaseJob(ctx, tx, kind, key, owner, now)
		return err
	})
}

// Park implements jobs.Queue.
func (q *Jobs) Park(ctx context.Context, kind jobs.Kind, key, owner string, payload []byte, now time.Time) error {
	return q.db.Write(ctx, func(tx Querier) error {
		_, err := q.db.parkJob(ctx, tx, kind, key, owner, payload, now)
		return err
	})
}

// Unpark implements jobs.Queue.
func (q *Jobs) Unpark(ctx context.Context, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	return writeValue(ctx, q.db, func(tx Querier) (jobs.Job, error) {
		return q.db.unparkJob(ctx, tx, kind, key, payload, now)
	})
}

// Finish implements jobs.Queue.
func (q *Jobs) Finish(ctx context.Context, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) error {
	return q.db.Write(ctx, func(tx Querier) error {
		_, err := q.db.finishJob(ctx, tx, kind, key, owner, state, errText, payload, now)
		return err
	})
}

// cancelJob is Cancel on q, with a payload (nil keeps it) as Finish has.
func (db *DB) cancelJob(ctx context.Context, q Querier, kind jobs.Kind, key, errText string, payload []byte, now time.Time) error {
	set, p := jobPayload(payload)
	n, err := q.Exec(ctx, `UPDATE jobs SET state = 'failed', error = $3, updated_at = $4, finished_at = $4,
			payload = CASE WHEN $5 THEN $6 ELSE payload END
		WHERE kind = $1 AND key = $2 AND state IN ('ready', 'parked')`, string(kind), key, errText, nanos(now), set, p)
	if err != nil {
		return db.errorf("cancel %s/%s: %w", kind, key, err)
	}
	if n == 1 {
		return nil
	}
	return db.jobWhy(ctx, q, "cancel", kind, key, jobs.ErrNotClaimable)
}

// Cancel implements jobs.Queue.
func (q *Jobs) Cancel(ctx context.Context, kind jobs.Kind, key, errText string, now time.Time) error {
	return q.db.Write(ctx, func(tx Querier) error { return q.db.cancelJob(ctx, tx, kind, key, errText, nil, now) })
}

// failExpiredJobs is FailExpired on q.
func (db *DB) failExpiredJobs(ctx context.Context, q Querier, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	if maxAttempts <= 0 {
		return 0, db.errorf("fail expired: max attempts %d: %w", maxAttempts, jobs.ErrInvalid)
	}
	n, err := q.Exec(ctx, `UPDATE jobs SET state = 'failed', error = $4, owner = '', lease_until = 0,
			updated_at = $2, finished_at = $2
		WHERE kind = $1 AND state = 'held' AND lease_until < $2 AND attempts >= $3`,
		string(kind), nanos(now), maxAttempts, errText)
	if err != nil {
		return 0, db.errorf("fail expired %s: %w", kind, err)
	}
	return int(n), nil
}

// FailExpired implements jobs.Queue.
func (q *Jobs) FailExpired(ctx context.Context, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	return writeValue(ctx, q.db, func(tx Querier) (int, error) {
		return q.db.failExpiredJobs(ctx, tx, kind, now, maxAttempts, errText)
	})
}

// getJob is Get on q.
func (db *DB) getJob(ctx context.Context, q Querier, kind jobs.Kind, key string) (jobs.Job, error) {
	j, err := scanJob(q.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE kind = $1 AND key = $2`, string(kind), key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return jobs.Job{}, db.errorf("job %s/%s: %w", kind, key, jobs.ErrNotFound)
	case err != nil:
		return jobs.Job{}, db.errorf("job %s/%s: %w", kind, key, err)
	}
	return j, nil
}

// Get implements jobs.Queue.
func (q *Jobs) Get(ctx context.Context, kind jobs.Kind, key string) (jobs.Job, error) {
	return q.db.getJob(ctx, q.db.Read(), kind, key)
}

// pruneJobs deletes the jobs finished before before (of the given kinds
// only, when there are any) and the instances last seen before it, in one
// transaction.
func (db *DB) pruneJobs(ctx context.Context, before time.Time, kinds ...jobs.Kind) (int, error) {
	ks := make([]string, len(kinds))
	for i, k := range kinds {
		ks[i] = string(k)
	}
	list, err := db.list(ks)
	if err != nil {
		return 0, db.errorf("prune: %w", err)
	}
	var n int64
	err = db.Tx(ctx, func(q Querier) error {
		a, err := q.Exec(ctx, `DELETE FROM jobs WHERE state IN ('done', 'failed') AND finished_at < $1
			AND ($2 = 0 OR `+db.inList("kind", "$3")+`)`, nanos(before), len(ks), list)
		if err != nil {
			return err
		}
		b, err := q.Exec(ctx, `DELETE FROM instances WHERE seen_at < $1`, nanos(before))
		n = a + b
		return err
	})
	if err != nil {
		return 0, db.errorf("prune: %w", err)
	}
	return int(n), nil
}

// Prune implements jobs.Queue.
func (q *Jobs) Prune(ctx context.Context, before time.Time) (int, error) {
	return q.db.pruneJobs(ctx, before)
}

// instances is the registry of processes (table instances): the bot
// processes on one database announce themselves every few seconds and count
// each other to split Slack's per-workspace rate limits. Jobs and Slack
// both offer it.
type instances struct{ db *DB }

// TouchInstance implements jobs.Queue (and slackstate.Store).
func (i instances) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return i.db.Write(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO instances (id, seen_at) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, nanos(now)); err != nil {
			return i.db.errorf("touch instance: %w", err)
		}
		return nil
	})
}

// LiveInstances implements jobs.Queue (and slackstate.Store).
func (i instances) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := i.db.Read().QueryRow(ctx, `SELECT count(*) FROM instances WHERE seen_at >= $1`, nanos(since)).Scan(&n); err != nil {
		return 0, i.db.errorf("live instances: %w", err)
	}
	return n, nil
}

// LeaveInstance implements jobs.Queue (and slackstate.Store).
func (i instances) LeaveInstance(ctx context.Context, id string) error {
	return i.db.Write(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM instances WHERE id = $1`, id); err != nil {
			return i.db.errorf("leave instance: %w", err)
		}
		return nil
	})
}
