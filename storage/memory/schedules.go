package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

type key struct {
	id  string
	due int64
}

// Schedules is an in-memory schedule.Store, the reference for the SQL
// stores and the store of unit tests. The zero value is not usable; call
// NewSchedules.
//
// A firing is its record in firings (manual, claimed_at, the outcome's
// error text, the digest) and a KindFiring job on q that holds its lease and
// state (jobmap.FiringJob): the lease rules are jobs.go's. q's mutex guards
// both, so a record and its job change together.
type Schedules struct {
	q         *Jobs
	schedules map[string]schedule.Schedule
	firings   map[key]schedule.Firing // without the lease fields
}

// NewSchedules returns an empty store.
func NewSchedules() *Schedules {
	return &Schedules{q: NewJobs(), schedules: map[string]schedule.Schedule{}, firings: map[key]schedule.Firing{}}
}

func (kk key) job() string { return jobmap.FiringKey(kk.id, kk.due) }

// firing returns the firing kk with its lease, or ErrNotFound; the caller
// holds q.mu.
func (s *Schedules) firing(kk key) (schedule.Firing, error) {
	f, ok := s.firings[kk]
	if !ok {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%d: %w", kk.id, kk.due, schedule.ErrNotFound)
	}
	j, err := s.q.get(jobs.KindFiring, kk.job())
	if err != nil {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%d: %w", kk.id, kk.due, err)
	}
	f = cloneFiring(f)
	jobmap.FiringLease(&f, j)
	return f, nil
}

func k(id string, due time.Time) key { return key{id, due.UnixNano()} }

func cloneDigest(d *schedule.Digest) *schedule.Digest {
	if d == nil {
		return nil
	}
	c := *d
	c.Findings = append([]string(nil), d.Findings...)
	c.Sources = append([]research.Source(nil), d.Sources...)
	return &c
}

func cloneFiring(f schedule.Firing) schedule.Firing {
	f.Digest = cloneDigest(f.Digest)
	return f
}

func (s *Schedules) lastDue(id string) time.Time {
	var last time.Time
	for k, f := range s.firings {
		if k.id == id && f.Due.After(last) {
			last = f.Due
		}
	}
	return last
}

// CreateSchedule implements schedule.Store.
func (s *Schedules) CreateSchedule(_ context.Context, sc schedule.Schedule, maxPerChannel int) error {
	sc = dbtext.Schedule(sc)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.schedules[sc.ID]; ok {
		return fmt.Errorf("memory: %s: %w", sc.ID, schedule.ErrAlreadyExists)
	}
	n := 0
	for _, o := range s.schedules {
		if o.Channel == sc.Channel {
			n++
		}
	}
	if maxPerChannel > 0 && n >= maxPerChannel {
		return fmt.Errorf("memory: channel %s has %d schedules: %w", sc.Channel, n, schedule.ErrLimit)
	}
	sc.LastDue = time.Time{}
	s.schedules[sc.ID] = sc
	return nil
}

// GetSchedule implements schedule.Store.
func (s *Schedules) GetSchedule(_ context.Context, id string) (schedule.Schedule, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	sc, ok := s.schedules[id]
	if !ok {
		return schedule.Schedule{}, fmt.Errorf("memory: schedule %s: %w", id, schedule.ErrNotFound)
	}
	sc.LastDue = s.lastDue(id)
	return sc, nil
}

// UpdateSchedule implements schedule.Store.
func (s *Schedules) UpdateSchedule(_ context.Context, sc schedule.Schedule) error {
	sc = dbtext.Schedule(sc)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	old, ok := s.schedules[sc.ID]
	if !ok {
		return fmt.Errorf("memory: schedule %s: %w", sc.ID, schedule.ErrNotFound)
	}
	old.Channel, old.Topic, old.Spec, old.TZ = sc.Channel, sc.Topic, sc.Spec, sc.TZ
	old.Enabled, old.Options, old.ActiveSince, old.UpdatedAt = sc.Enabled, sc.Options, sc.ActiveSince, sc.UpdatedAt
	s.schedules[sc.ID] = old
	return nil
}

// DeleteSchedule implements schedule.Store.
func (s *Schedules) DeleteSchedule(_ context.Context, id string) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.schedules[id]; !ok {
		return fmt.Errorf("memory: schedule %s: %w", id, schedule.ErrNotFound)
	}
	delete(s.schedules, id)
	for k := range s.firings {
		if k.id == id {
			delete(s.firings, k)
			s.q.drop(jobs.KindFiring, k.job())
		}
	}
	return nil
}

// ListSchedules implements schedule.Store.
func (s *Schedules) ListSchedules(_ context.Context, f schedule.Filter) ([]schedule.Schedule, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var out []schedule.Schedule
	for _, sc := range s.schedules {
		if (f.Channel != "" && sc.Channel != f.Channel) || (f.Owner != "" && sc.Owner != f.Owner) || (f.EnabledOnly && !sc.Enabled) {
			continue
		}
		sc.LastDue = s.lastDue(sc.ID)
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// ClaimFiring implements schedule.Store.
func (s *Schedules) ClaimFiring(_ context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	kk := k(f.ScheduleID, f.Due)
	j, err := jobmap.FiringJob(f, kk.due)
	if err != nil {
		return false, fmt.Errorf("memory: %w", err)
	}
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.schedules[f.ScheduleID]; !ok {
		return false, fmt.Errorf("memory: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
	}
	if _, ok := s.firings[kk]; ok {
		return false, nil
	}
	s.q.drop(j.Kind, j.Key) // never there: DeleteSchedule drops the jobs
	if _, err := s.q.put([]jobs.Job{j}); err != nil {
		return false, err
	}
	f.Owner, f.LeaseUntil, f.Attempts, f.FinishedAt, f.State = "", time.Time{}, 0, time.Time{}, ""
	s.firings[kk] = cloneFiring(f)
	return true, nil
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
func (s *Schedules) RenewFiring(_ context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	_, err := s.q.extend(jobs.KindFiring, k(id, due).job(), owner, leaseUntil, 0)
	return leaseErr(err)
}

// FinishFiring implements schedule.Store. A waiting firing has no lease: it
// is finished by whoever finishes it (a decline, or its claimer whose
// request for approval failed), as a job unparked, claimed and finished.
func (s *Schedules) FinishFiring(_ context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	state, payload, err := jobmap.FiringFinish(out)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	kk := k(id, due)
	j, err := s.q.get(jobs.KindFiring, kk.job())
	if err != nil {
		return leaseErr(err)
	}
	if j.State == jobs.Parked {
		if _, err := s.q.unpark(jobs.KindFiring, j.Key, nil, out.FinishedAt); err != nil {
			return leaseErr(err)
		}
		if _, err := s.q.claimKey(jobs.KindFiring, j.Key, owner, out.FinishedAt, 0, 0); err != nil {
			return leaseErr(err)
		}
	}
	if _, err := s.q.finishHeld(jobs.KindFiring, j.Key, owner, state, "", payload, out.FinishedAt); err != nil {
		return leaseErr(err)
	}
	f := s.firings[kk]
	f.Error, f.Digest = out.Error, cloneDigest(out.Digest)
	s.firings[kk] = f
	return nil
}

// TakeOverFiring implements schedule.Store: Claim with the bound on attempts.
func (s *Schedules) TakeOverFiring(_ context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var out []schedule.Firing
	for _, j := range s.q.claimAll(jobs.KindFiring, owner, now, leaseUntil.Sub(now), 0, maxAttempts) {
		id, due, err := jobmap.ParseFiringKey(j.Key)
		if err != nil {
			return nil, fmt.Errorf("memory: take over: %w", err)
		}
		f, err := s.firing(key{id, due})
		if err != nil {
			return nil, fmt.Errorf("take over: %w", err)
		}
		out = append(out, f)
	}
	sortFirings(out)
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Schedules) FailExpired(_ context.Context, now time.Time, maxAttempts int) (int, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.q.failExpired(jobs.KindFiring, now, maxAttempts, "abandoned: the process running it stopped")
}

// ApproveFiring implements schedule.Store: Unpark, then ClaimKey by the
// approver.
func (s *Schedules) ApproveFiring(_ context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	kk := k(id, due)
	_, err := s.q.unpark(jobs.KindFiring, kk.job(), nil, now)
	switch {
	case errors.Is(err, jobs.ErrNotParked):
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%s: %w: %w", id, due, schedule.ErrNotWaiting, err)
	case err != nil:
		return schedule.Firing{}, jobmap.ScheduleErr(err)
	}
	if _, err := s.q.claimKey(jobs.KindFiring, kk.job(), owner, now, leaseUntil.Sub(now), 0); err != nil {
		return schedule.Firing{}, jobmap.ScheduleErr(err)
	}
	return s.firing(kk)
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(_ context.Context, id string, due time.Time) (schedule.Firing, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.firing(k(id, due))
}

// ListFirings implements schedule.Store.
func (s *Schedules) ListFirings(_ context.Context, id string, limit int) ([]schedule.Firing, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var out []schedule.Firing
	for kk := range s.firings {
		if kk.id == id {
			f, err := s.firing(kk)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Due.After(out[j].Due) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// PreviousDigest implements schedule.Store.
func (s *Schedules) PreviousDigest(_ context.Context, id string, before time.Time) (schedule.Firing, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var best *schedule.Firing
	for kk := range s.firings {
		if kk.id != id {
			continue
		}
		f, err := s.firing(kk)
		if err != nil {
			return schedule.Firing{}, err
		}
		if f.State != schedule.FiringDone || f.Digest == nil || !f.Due.Before(before) {
			continue
		}
		if best == nil || f.Due.After(best.Due) {
			best = &f
		}
	}
	if best == nil {
		return schedule.Firing{}, fmt.Errorf("memory: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	return *best, nil
}

func sortFirings(fs []schedule.Firing) {
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].Due.Equal(fs[j].Due) {
			return fs[i].Due.Before(fs[j].Due)
		}
		return fs[i].ScheduleID < fs[j].ScheduleID
	})
}
