package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/dbtext"
)

type key struct {
	id  string
	due int64
}

// Schedules is an in-memory schedule.Store, the reference for the SQL
// stores and the store of unit tests. The zero value is not usable; call
// NewSchedules.
type Schedules struct {
	mu        sync.Mutex
	schedules map[string]schedule.Schedule
	firings   map[key]schedule.Firing
}

// NewSchedules returns an empty store.
func NewSchedules() *Schedules {
	return &Schedules{schedules: map[string]schedule.Schedule{}, firings: map[key]schedule.Firing{}}
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[id]; !ok {
		return fmt.Errorf("memory: schedule %s: %w", id, schedule.ErrNotFound)
	}
	delete(s.schedules, id)
	for k := range s.firings {
		if k.id == id {
			delete(s.firings, k)
		}
	}
	return nil
}

// ListSchedules implements schedule.Store.
func (s *Schedules) ListSchedules(_ context.Context, f schedule.Filter) ([]schedule.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[f.ScheduleID]; !ok {
		return false, fmt.Errorf("memory: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
	}
	kk := k(f.ScheduleID, f.Due)
	if _, ok := s.firings[kk]; ok {
		return false, nil
	}
	s.firings[kk] = cloneFiring(f)
	return true, nil
}

// RenewFiring implements schedule.Store.
func (s *Schedules) RenewFiring(_ context.Context, id string, due time.Time, owner string, leaseUntil time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.firings[k(id, due)]
	if !ok || f.State != schedule.FiringRunning || f.Owner != owner {
		return fmt.Errorf("memory: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	f.LeaseUntil = leaseUntil
	s.firings[k(id, due)] = f
	return nil
}

// FinishFiring implements schedule.Store.
func (s *Schedules) FinishFiring(_ context.Context, id string, due time.Time, owner string, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.firings[k(id, due)]
	if !ok || f.Owner != owner || f.State.Final() {
		return fmt.Errorf("memory: firing %s@%s: %w", id, due, schedule.ErrLeaseLost)
	}
	f.State, f.Error, f.Digest, f.FinishedAt = out.State, out.Error, cloneDigest(out.Digest), out.FinishedAt
	s.firings[k(id, due)] = f
	return nil
}

// TakeOverFiring implements schedule.Store.
func (s *Schedules) TakeOverFiring(_ context.Context, owner string, now, leaseUntil time.Time, maxAttempts int) ([]schedule.Firing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schedule.Firing
	for kk, f := range s.firings {
		if f.State == schedule.FiringRunning && f.LeaseUntil.Before(now) && f.Attempts < maxAttempts {
			f.Owner, f.LeaseUntil, f.Attempts = owner, leaseUntil, f.Attempts+1
			s.firings[kk] = f
			out = append(out, cloneFiring(f))
		}
	}
	sortFirings(out)
	return out, nil
}

// FailExpired implements schedule.Store.
func (s *Schedules) FailExpired(_ context.Context, now time.Time, maxAttempts int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for kk, f := range s.firings {
		if f.State == schedule.FiringRunning && f.LeaseUntil.Before(now) && f.Attempts >= maxAttempts {
			f.State, f.Error, f.FinishedAt = schedule.FiringFailed, "abandoned: the process running it stopped", now
			s.firings[kk] = f
			n++
		}
	}
	return n, nil
}

// ApproveFiring implements schedule.Store.
func (s *Schedules) ApproveFiring(_ context.Context, id string, due time.Time, owner string, now, leaseUntil time.Time) (schedule.Firing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.firings[k(id, due)]
	if !ok {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	if f.State != schedule.FiringWaiting {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%s is %s: %w", id, due, f.State, schedule.ErrNotWaiting)
	}
	f.State, f.Owner, f.LeaseUntil, f.Attempts = schedule.FiringRunning, owner, leaseUntil, f.Attempts+1
	s.firings[k(id, due)] = f
	return cloneFiring(f), nil
}

// GetFiring implements schedule.Store.
func (s *Schedules) GetFiring(_ context.Context, id string, due time.Time) (schedule.Firing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.firings[k(id, due)]
	if !ok {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	return cloneFiring(f), nil
}

// ListFirings implements schedule.Store.
func (s *Schedules) ListFirings(_ context.Context, id string, limit int) ([]schedule.Firing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schedule.Firing
	for kk, f := range s.firings {
		if kk.id == id {
			out = append(out, cloneFiring(f))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *schedule.Firing
	for kk, f := range s.firings {
		if kk.id != id || f.State != schedule.FiringDone || f.Digest == nil || !f.Due.Before(before) {
			continue
		}
		if best == nil || f.Due.After(best.Due) {
			f := f
			best = &f
		}
	}
	if best == nil {
		return schedule.Firing{}, fmt.Errorf("memory: previous digest of %s: %w", id, schedule.ErrNotFound)
	}
	return cloneFiring(*best), nil
}

func sortFirings(fs []schedule.Firing) {
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].Due.Equal(fs[j].Due) {
			return fs[i].Due.Before(fs[j].Due)
		}
		return fs[i].ScheduleID < fs[j].ScheduleID
	})
}
