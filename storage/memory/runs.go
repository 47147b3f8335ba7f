// Package memory keeps the bot's runs, inbox and schedules in memory: the
// reference implementation of the SQL stores' rules, for tests and
// single-process experiments. Several bots sharing one Runs behave like
// replicas sharing a database.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Runs is the bot's store of runs, threads, the inbox and events in
// memory. The zero value is not usable; call NewRuns.
type Runs struct {
	mu      sync.Mutex
	threads map[research.ThreadKey]research.Thread
	runs    map[string]*research.Run
	order   []string // run ids in creation order
	uploads map[string]research.Upload
	// q holds the inbox, the event keys and the instances (inbox.go).
	q *Jobs
}

// NewRuns returns an empty Runs.
func NewRuns() *Runs {
	return &Runs{
		threads: map[research.ThreadKey]research.Thread{},
		runs:    map[string]*research.Run{},
		uploads: map[string]research.Upload{},
		q:       NewJobs(),
	}
}

func clone(r *research.Run) research.Run {
	c := *r
	if r.Interrupt != nil {
		i := *r.Interrupt
		c.Interrupt = &i
	}
	if r.Decision != nil {
		d := *r.Decision
		c.Decision = &d
	}
	return c
}

// PutThread implements research.Store.
func (s *Runs) PutThread(_ context.Context, t research.Thread) (research.Thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.threads[t.Key]; ok {
		return old, nil
	}
	s.threads[t.Key] = t
	return t, nil
}

// Thread implements research.Store.
func (s *Runs) Thread(_ context.Context, key research.ThreadKey) (research.Thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.threads[key]
	if !ok {
		return research.Thread{}, fmt.Errorf("thread %v: %w", key, research.ErrNotFound)
	}
	return t, nil
}

// CreateRun implements research.Store.
func (s *Runs) CreateRun(_ context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
	}
	perUser := 0
	for _, o := range s.runs {
		if !o.State.Active() {
			continue
		}
		if o.ThreadID == r.ThreadID {
			return fmt.Errorf("thread %s: %w", r.ThreadID, research.ErrThreadBusy)
		}
		if o.Requester == r.Requester {
			perUser++
		}
	}
	if maxPerUser > 0 && perUser >= maxPerUser {
		return fmt.Errorf("user %s has %d: %w", r.Requester, perUser, research.ErrUserLimit)
	}
	r.State = research.StateQueued
	r.Owner, r.LeaseUntil, r.Attempt = "", time.Time{}, 0
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	c := clone(&r)
	s.runs[r.ID] = &c
	s.order = append(s.order, r.ID)
	return nil
}

func (s *Runs) get(id string) (*research.Run, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, research.ErrNotFound)
	}
	return r, nil
}

// Run implements research.Store.
func (s *Runs) Run(_ context.Context, id string) (research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return research.Run{}, err
	}
	return clone(r), nil
}

// LatestRun implements research.Store.
func (s *Runs) LatestRun(_ context.Context, threadID string) (research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.order) - 1; i >= 0; i-- {
		if r := s.runs[s.order[i]]; r.ThreadID == threadID {
			return clone(r), nil
		}
	}
	return research.Run{}, fmt.Errorf("latest run of %s: %w", threadID, research.ErrNotFound)
}

// ListRuns implements research.Store.
func (s *Runs) ListRuns(_ context.Context, f research.RunFilter) ([]research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []research.Run
	for i := len(s.order) - 1; i >= 0; i-- {
		r := s.runs[s.order[i]]
		if f.Requester != "" && r.Requester != f.Requester {
			continue
		}
		if f.Channel != "" && r.Key.Channel != f.Channel {
			continue
		}
		if len(f.States) > 0 && !slices.Contains(f.States, r.State) {
			continue
		}
		out = append(out, clone(r))
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

func acquirable(r *research.Run, now time.Time) bool {
	switch r.State {
	case research.StateQueued:
		return true
	case research.StateRunning:
		return r.LeaseUntil.Before(now)
	}
	return false
}

func acquire(r *research.Run, owner string, now time.Time, lease time.Duration) {
	r.State = research.StateRunning
	r.Owner = owner
	r.LeaseUntil = now.Add(lease)
	r.Attempt++
	r.UpdatedAt = now
}

// AcquireRun implements research.Store.
func (s *Runs) AcquireRun(_ context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return research.Run{}, err
	}
	if !acquirable(r, now) {
		return research.Run{}, fmt.Errorf("run %s (%s by %q): %w", id, r.State, r.Owner, research.ErrNotAcquired)
	}
	acquire(r, owner, now, lease)
	return clone(r), nil
}

// AcquireRuns implements research.Store.
func (s *Runs) AcquireRuns(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []research.Run
	for _, id := range s.order {
		if limit > 0 && len(out) >= limit {
			break
		}
		r := s.runs[id]
		if acquirable(r, now) {
			acquire(r, owner, now, lease)
			out = append(out, clone(r))
		}
	}
	return out, nil
}

func (s *Runs) held(id, owner string) (*research.Run, error) {
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if r.State != research.StateRunning || r.Owner != owner {
		return nil, fmt.Errorf("run %s (%s by %q): %w", id, r.State, r.Owner, research.ErrLeaseLost)
	}
	return r, nil
}

// Heartbeat implements research.Store.
func (s *Runs) Heartbeat(_ context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return research.Run{}, err
	}
	r.LeaseUntil = now.Add(lease)
	r.UpdatedAt = now
	return clone(r), nil
}

// ReleaseRun implements research.Store.
func (s *Runs) ReleaseRun(_ context.Context, id, owner string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return err
	}
	r.State, r.Owner, r.LeaseUntil, r.UpdatedAt = research.StateQueued, "", time.Time{}, now
	if r.Attempt > 1 {
		// A run handed back cleanly is no failed try: its next pickup
		// does not count toward the bound (see research.Store.ReleaseRun).
		r.Attempt--
	}
	return nil
}

// WaitRun implements research.Store.
func (s *Runs) WaitRun(_ context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return err
	}
	r.State, r.Owner, r.LeaseUntil, r.UpdatedAt = research.StateWaiting, "", time.Time{}, now
	r.Interrupt = &intr
	r.Decision = nil
	return nil
}

// FinishRun implements research.Store.
func (s *Runs) FinishRun(_ context.Context, id, owner string, state research.RunState, errText string, now time.Time) error {
	errText = dbtext.String(errText)
	if state.Active() {
		return fmt.Errorf("finish run %s: %q is not a final state", id, state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return err
	}
	r.State, r.Owner, r.LeaseUntil, r.Error = state, "", time.Time{}, errText
	r.UpdatedAt, r.FinishedAt = now, now
	return nil
}

// SetStatusMessage implements research.Store.
func (s *Runs) SetStatusMessage(_ context.Context, id, ts string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return "", err
	}
	if r.StatusTS == "" {
		r.StatusTS = ts
	}
	return r.StatusTS, nil
}

// Decide implements research.Store.
func (s *Runs) Decide(_ context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return research.Run{}, err
	}
	if r.Interrupt == nil || r.Interrupt.ID != d.InterruptID {
		return clone(r), fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, research.ErrNotWaiting)
	}
	if r.Decision != nil {
		return clone(r), fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, research.ErrAlreadyDecided)
	}
	if r.State != research.StateWaiting {
		return clone(r), fmt.Errorf("run %s is %s: %w", runID, r.State, research.ErrNotWaiting)
	}
	dc := d
	r.Decision = &dc
	r.UpdatedAt = d.At
	if d.Action == research.ActionCancel {
		r.State, r.FinishedAt, r.CancelRequestedBy = research.StateCancelled, d.At, d.By
	} else {
		r.State, r.Attempt = research.StateQueued, 0
	}
	return clone(r), nil
}

// RequestCancel implements research.Store.
func (s *Runs) RequestCancel(_ context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return research.Run{}, false, err
	}
	switch r.State {
	case research.StateQueued, research.StateWaiting:
		r.State, r.Owner, r.LeaseUntil = research.StateCancelled, "", time.Time{}
		r.CancelRequestedBy, r.UpdatedAt, r.FinishedAt = by, now, now
		return clone(r), true, nil
	case research.StateRunning:
		if r.CancelRequestedBy == "" {
			r.CancelRequestedBy = by
			r.UpdatedAt = now
		}
		return clone(r), false, nil
	}
	return clone(r), false, fmt.Errorf("run %s is %s: %w", runID, r.State, research.ErrFinished)
}

// RecordUpload implements research.Store.
func (s *Runs) RecordUpload(_ context.Context, u research.Upload) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.uploads[u.RunID]; ok {
		return false, nil
	}
	s.uploads[u.RunID] = u
	return true, nil
}

// Upload implements research.Store.
func (s *Runs) Upload(_ context.Context, runID string) (research.Upload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[runID]
	if !ok {
		return research.Upload{}, fmt.Errorf("upload of %s: %w", runID, research.ErrNotFound)
	}
	return u, nil
}
