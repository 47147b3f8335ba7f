package memory

import (
	"context"
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
// error text, the digest, the final state of one that never ran); one that
// ran shows the state of its digest run's KindRun job on q (jobmap.FiringRun),
// when the store shares q with the runs (NewSchedulesOn).
type Schedules struct {
	q         *Jobs
	schedules map[string]schedule.Schedule
	firings   map[key]schedule.Firing // State: the row's own
}

// NewSchedules returns an empty store whose firings see no runs (those
// that ran show as running).
func NewSchedules() *Schedules { return newSchedules(NewJobs()) }

// NewSchedulesOn returns an empty store whose firings show the state of
// the digest runs in r.
func NewSchedulesOn(r *Runs) *Schedules { return newSchedules(r.q) }

func newSchedules(q *Jobs) *Schedules {
	return &Schedules{q: q, schedules: map[string]schedule.Schedule{}, firings: map[key]schedule.Firing{}}
}

// firing returns the firing kk with its run's state, or ErrNotFound; the
// caller holds q.mu.
func (s *Schedules) firing(kk key) (schedule.Firing, error) {
	f, ok := s.firings[kk]
	if !ok {
		return schedule.Firing{}, fmt.Errorf("memory: firing %s@%d: %w", kk.id, kk.due, schedule.ErrNotFound)
	}
	f = cloneFiring(f)
	j, err := s.q.get(jobs.KindRun, schedule.RunID(kk.id, time.Unix(0, kk.due)))
	jobmap.FiringRun(&f, string(f.State), j, err == nil)
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

// RecordFiring implements schedule.Store.
func (s *Schedules) RecordFiring(_ context.Context, f schedule.Firing) (bool, error) {
	f.Digest = dbtext.Digest(f.Digest)
	f.Error = dbtext.String(f.Error)
	kk := k(f.ScheduleID, f.Due)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.schedules[f.ScheduleID]; !ok {
		return false, fmt.Errorf("memory: schedule %s: %w", f.ScheduleID, schedule.ErrNotFound)
	}
	if _, ok := s.firings[kk]; ok {
		return false, nil
	}
	f.Owner, f.LeaseUntil, f.Attempts, f.FinishedAt = "", time.Time{}, 0, time.Time{}
	f.State = schedule.FiringState(jobmap.RowState(f.State))
	s.firings[kk] = cloneFiring(f)
	return true, nil
}

// RecordOutcome implements schedule.Store.
func (s *Schedules) RecordOutcome(_ context.Context, id string, due time.Time, out schedule.Outcome) error {
	out = dbtext.Outcome(out)
	kk := k(id, due)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	f, ok := s.firings[kk]
	if !ok {
		return fmt.Errorf("memory: firing %s@%s: %w", id, due, schedule.ErrNotFound)
	}
	f.Error = out.Error
	if out.Digest != nil {
		f.Digest = cloneDigest(out.Digest)
	}
	s.firings[kk] = f
	return nil
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
		if f.Digest == nil || !f.Due.Before(before) {
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
