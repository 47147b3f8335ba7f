package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
)

// Jobs is jobs.Queue in memory, for one process: the reference the SQL
// implementations are checked against. One mutex makes every method atomic.
//
// The lease rules live here once, in unexported methods that run with mu
// held: the exported methods lock and call them, and Runs and Schedules,
// which keep their records under the same mutex, call them so that a record
// and its job change together.
type Jobs struct {
	mu        sync.Mutex
	jobs      map[jobKey]jobs.Job
	live      map[jobKey]struct{} // the Ready and Held jobs: Claim scans only these
	instances map[string]time.Time
}

type jobKey struct {
	kind jobs.Kind
	key  string
}

var _ jobs.Queue = (*Jobs)(nil)

// NewJobs returns an empty queue.
func NewJobs() *Jobs {
	return &Jobs{jobs: map[jobKey]jobs.Job{}, live: map[jobKey]struct{}{}, instances: map[string]time.Time{}}
}

// cloneJob copies the payload so callers never share memory with the store,
// and reads times back in UTC as the SQL stores do.
func cloneJob(j jobs.Job) jobs.Job {
	j.Payload = bytes.Clone(j.Payload)
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	for _, t := range []*time.Time{&j.LeaseUntil, &j.CreatedAt, &j.UpdatedAt, &j.FinishedAt} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	return j
}

// store saves j and keeps the live set in step; the caller holds mu.
func (q *Jobs) store(j jobs.Job) {
	k := jobKey{j.Kind, j.Key}
	q.jobs[k] = j
	if j.State == jobs.Ready || j.State == jobs.Held {
		q.live[k] = struct{}{}
	} else {
		delete(q.live, k)
	}
}

// jobOlder orders jobs as claims take them: CreatedAt, then Key.
func jobOlder(a, b jobs.Job) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.Key < b.Key
}

// Put implements jobs.Queue.
func (q *Jobs) Put(_ context.Context, js []jobs.Job) ([]bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.put(js)
}

// put is Put; the caller holds mu.
func (q *Jobs) put(js []jobs.Job) ([]bool, error) {
	js, err := jobs.CheckPut(js)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	stored := make([]bool, len(js))
	for i, j := range js {
		k := jobKey{j.Kind, j.Key}
		if _, ok := q.jobs[k]; ok {
			continue
		}
		q.store(cloneJob(j))
		stored[i] = true
	}
	return stored, nil
}

// claim takes j for owner; the caller holds mu and has checked Claimable.
func (q *Jobs) claim(j jobs.Job, owner string, now time.Time, lease time.Duration) jobs.Job {
	j.State, j.Owner, j.LeaseUntil, j.UpdatedAt = jobs.Held, owner, now.Add(lease), now
	j.Attempts++
	q.store(j)
	return cloneJob(j)
}

// ClaimKey implements jobs.Queue.
func (q *Jobs) ClaimKey(_ context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claimKey(kind, key, owner, now, lease, maxAttempts)
}

// claimKey is ClaimKey; the caller holds mu.
func (q *Jobs) claimKey(kind jobs.Kind, key, owner string, now time.Time, lease time.Duration, maxAttempts int) (jobs.Job, error) {
	j, ok := q.jobs[jobKey{kind, key}]
	if !ok {
		return jobs.Job{}, fmt.Errorf("memory: claim %s/%s: %w", kind, key, jobs.ErrNotFound)
	}
	if !j.Claimable(now, maxAttempts) {
		return jobs.Job{}, fmt.Errorf("memory: claim %s/%s (%s by %q, %d attempts): %w", kind, key, j.State, j.Owner, j.Attempts, jobs.ErrNotClaimable)
	}
	return q.claim(j, owner, now, lease), nil
}

// Claim implements jobs.Queue.
func (q *Jobs) Claim(_ context.Context, kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) ([]jobs.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claimAll(kind, owner, now, lease, limit, maxAttempts), nil
}

// claimAll is Claim; the caller holds mu.
func (q *Jobs) claimAll(kind jobs.Kind, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) []jobs.Job {
	return q.claimAllOf(kind, nil, owner, now, lease, limit, maxAttempts)
}

// claimAllOf is claimAll limited, when runKind is set, to the keys of that
// kind of run (research.RunKind).
func (q *Jobs) claimAllOf(kind jobs.Kind, runKind *string, owner string, now time.Time, lease time.Duration, limit, maxAttempts int) []jobs.Job {
	// Keep the oldest limit candidates, sorted, in one pass.
	var cand []jobs.Job
	for k := range q.live {
		j := q.jobs[k]
		if k.kind != kind || !j.Claimable(now, maxAttempts) || runKind != nil && research.RunKind(k.key) != *runKind {
			continue
		}
		if limit > 0 && len(cand) == limit {
			if !jobOlder(j, cand[limit-1]) {
				continue
			}
			cand = cand[:limit-1]
		}
		i := sort.Search(len(cand), func(i int) bool { return jobOlder(j, cand[i]) })
		cand = append(cand, jobs.Job{})
		copy(cand[i+1:], cand[i:])
		cand[i] = j
	}
	got := make([]jobs.Job, 0, len(cand))
	for _, j := range cand {
		got = append(got, q.claim(j, owner, now, lease))
	}
	return got
}

// held returns the job owner holds, or ErrNotFound or ErrLeaseLost. The
// caller holds mu.
func (q *Jobs) held(what string, kind jobs.Kind, key, owner string) (jobs.Job, error) {
	j, ok := q.jobs[jobKey{kind, key}]
	if !ok {
		return jobs.Job{}, fmt.Errorf("memory: %s %s/%s: %w", what, kind, key, jobs.ErrNotFound)
	}
	if j.State != jobs.Held || j.Owner != owner {
		return jobs.Job{}, fmt.Errorf("memory: %s %s/%s (%s by %q): %w", what, kind, key, j.State, j.Owner, jobs.ErrLeaseLost)
	}
	return j, nil
}

// Extend implements jobs.Queue.
func (q *Jobs) Extend(_ context.Context, kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.extend(kind, key, owner, now, lease)
}

// extend is Extend; the caller holds mu.
func (q *Jobs) extend(kind jobs.Kind, key, owner string, now time.Time, lease time.Duration) (jobs.Job, error) {
	j, err := q.held("extend", kind, key, owner)
	if err != nil {
		return jobs.Job{}, err
	}
	j.LeaseUntil, j.UpdatedAt = now.Add(lease), now
	q.store(j)
	return cloneJob(j), nil
}

// Release implements jobs.Queue.
func (q *Jobs) Release(_ context.Context, kind jobs.Kind, key, owner string, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, err := q.release(kind, key, owner, now)
	return err
}

// release is Release; the caller holds mu.
func (q *Jobs) release(kind jobs.Kind, key, owner string, now time.Time) (jobs.Job, error) {
	j, err := q.held("release", kind, key, owner)
	if err != nil {
		return jobs.Job{}, err
	}
	j.State, j.Owner, j.LeaseUntil, j.UpdatedAt = jobs.Ready, "", time.Time{}, now
	j.Attempts = max(j.Attempts-1, 1)
	q.store(j)
	return cloneJob(j), nil
}

// Park implements jobs.Queue.
func (q *Jobs) Park(_ context.Context, kind jobs.Kind, key, owner string, payload []byte, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, err := q.park(kind, key, owner, payload, now)
	return err
}

// park is Park; the caller holds mu.
func (q *Jobs) park(kind jobs.Kind, key, owner string, payload []byte, now time.Time) (jobs.Job, error) {
	j, err := q.held("park", kind, key, owner)
	if err != nil {
		return jobs.Job{}, err
	}
	j.State, j.Owner, j.LeaseUntil, j.UpdatedAt = jobs.Parked, "", time.Time{}, now
	if payload != nil {
		j.Payload = bytes.Clone(payload)
	}
	q.store(j)
	return cloneJob(j), nil
}

// Unpark implements jobs.Queue.
func (q *Jobs) Unpark(_ context.Context, kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.unpark(kind, key, payload, now)
}

// unpark is Unpark; the caller holds mu.
func (q *Jobs) unpark(kind jobs.Kind, key string, payload []byte, now time.Time) (jobs.Job, error) {
	j, ok := q.jobs[jobKey{kind, key}]
	if !ok {
		return jobs.Job{}, fmt.Errorf("memory: unpark %s/%s: %w", kind, key, jobs.ErrNotFound)
	}
	if j.State != jobs.Parked {
		return jobs.Job{}, fmt.Errorf("memory: unpark %s/%s (%s): %w", kind, key, j.State, jobs.ErrNotParked)
	}
	j.State, j.Attempts, j.UpdatedAt = jobs.Ready, 0, now
	if payload != nil {
		j.Payload = bytes.Clone(payload)
	}
	q.store(j)
	return cloneJob(j), nil
}

// Finish implements jobs.Queue.
func (q *Jobs) Finish(_ context.Context, kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, err := q.finishHeld(kind, key, owner, state, errText, payload, now)
	return err
}

// finishHeld is Finish; the caller holds mu.
func (q *Jobs) finishHeld(kind jobs.Kind, key, owner string, state jobs.State, errText string, payload []byte, now time.Time) (jobs.Job, error) {
	if err := jobs.CheckFinish(state); err != nil {
		return jobs.Job{}, fmt.Errorf("memory: %s/%s: %w", kind, key, err)
	}
	j, err := q.held("finish", kind, key, owner)
	if err != nil {
		return jobs.Job{}, err
	}
	return q.finish(j, state, errText, payload, now), nil
}

// finish stores j finished and returns it; the caller holds mu.
func (q *Jobs) finish(j jobs.Job, state jobs.State, errText string, payload []byte, now time.Time) jobs.Job {
	j.State, j.Owner, j.LeaseUntil, j.UpdatedAt, j.FinishedAt = state, "", time.Time{}, now, now
	j.Error = ""
	if state == jobs.Failed {
		j.Error = errText
	}
	if payload != nil {
		j.Payload = bytes.Clone(payload)
	}
	q.store(j)
	return cloneJob(j)
}

// Cancel implements jobs.Queue.
func (q *Jobs) Cancel(_ context.Context, kind jobs.Kind, key, errText string, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cancel(kind, key, errText, nil, now)
}

// cancel is Cancel with a payload (nil keeps it) as Finish has; the caller
// holds mu.
func (q *Jobs) cancel(kind jobs.Kind, key, errText string, payload []byte, now time.Time) error {
	j, ok := q.jobs[jobKey{kind, key}]
	if !ok {
		return fmt.Errorf("memory: cancel %s/%s: %w", kind, key, jobs.ErrNotFound)
	}
	if j.State != jobs.Ready && j.State != jobs.Parked {
		return fmt.Errorf("memory: cancel %s/%s (%s by %q): %w", kind, key, j.State, j.Owner, jobs.ErrNotClaimable)
	}
	q.finish(j, jobs.Failed, errText, payload, now)
	return nil
}

// FailExpired implements jobs.Queue.
func (q *Jobs) FailExpired(_ context.Context, kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failExpired(kind, now, maxAttempts, errText)
}

// failExpired is FailExpired; the caller holds mu.
func (q *Jobs) failExpired(kind jobs.Kind, now time.Time, maxAttempts int, errText string) (int, error) {
	if maxAttempts <= 0 {
		return 0, fmt.Errorf("memory: fail expired: max attempts %d: %w", maxAttempts, jobs.ErrInvalid)
	}
	n := 0
	for k, j := range q.jobs {
		if k.kind == kind && j.State == jobs.Held && j.LeaseUntil.Before(now) && j.Attempts >= maxAttempts {
			q.finish(j, jobs.Failed, errText, nil, now)
			n++
		}
	}
	return n, nil
}

// drop deletes the job, if any; the caller holds mu.
func (q *Jobs) drop(kind jobs.Kind, key string) {
	delete(q.jobs, jobKey{kind, key})
	delete(q.live, jobKey{kind, key})
}

// Get implements jobs.Queue.
func (q *Jobs) Get(_ context.Context, kind jobs.Kind, key string) (jobs.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.get(kind, key)
}

// get is Get; the caller holds mu.
func (q *Jobs) get(kind jobs.Kind, key string) (jobs.Job, error) {
	j, ok := q.jobs[jobKey{kind, key}]
	if !ok {
		return jobs.Job{}, fmt.Errorf("memory: job %s/%s: %w", kind, key, jobs.ErrNotFound)
	}
	return cloneJob(j), nil
}

// Prune implements jobs.Queue.
func (q *Jobs) Prune(_ context.Context, before time.Time) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.prune(before), nil
}

// prune is Prune, of the given kinds only when there are any; the caller
// holds mu.
func (q *Jobs) prune(before time.Time, kinds ...jobs.Kind) int {
	n := 0
	for k, j := range q.jobs {
		if len(kinds) > 0 && !slices.Contains(kinds, k.kind) {
			continue
		}
		if j.State.Final() && j.FinishedAt.Before(before) {
			delete(q.jobs, k) // never live
			n++
		}
	}
	for id, seen := range q.instances {
		if seen.Before(before) {
			delete(q.instances, id)
			n++
		}
	}
	return n
}

// TouchInstance implements jobs.Queue.
func (q *Jobs) TouchInstance(_ context.Context, id string, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.instances[id] = now
	return nil
}

// LiveInstances implements jobs.Queue.
func (q *Jobs) LiveInstances(_ context.Context, since time.Time) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, seen := range q.instances {
		if !seen.Before(since) {
			n++
		}
	}
	return n, nil
}

// LeaveInstance implements jobs.Queue.
func (q *Jobs) LeaveInstance(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.instances, id)
	return nil
}
