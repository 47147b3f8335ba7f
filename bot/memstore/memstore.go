// Package memstore is an in-memory bot.Store for tests and single-process
// experiments. Several bots sharing one Store behave like replicas sharing a
// database.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"deepresearch/bot"
	"deepresearch/storage/dbtext"
)

// Store is an in-memory bot.Store. The zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	events  map[string]time.Time
	threads map[bot.ThreadKey]bot.Thread
	runs    map[string]*bot.Run
	order   []string // run ids in creation order
	uploads map[string]bot.Upload
	inbox   map[string]*bot.InboxEntry
	// instances: instance id -> when it last announced itself
	instances map[string]time.Time
}

var _ bot.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{
		events:  map[string]time.Time{},
		threads: map[bot.ThreadKey]bot.Thread{},
		runs:    map[string]*bot.Run{},
		uploads: map[string]bot.Upload{},
		inbox:   map[string]*bot.InboxEntry{},

		instances: map[string]time.Time{},
	}
}

func clone(r *bot.Run) bot.Run {
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

// ClaimEvent implements bot.Store.
func (s *Store) ClaimEvent(_ context.Context, key string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[key]; ok {
		return false, nil
	}
	s.events[key] = at
	return true, nil
}

// PruneEvents implements bot.Store.
func (s *Store) PruneEvents(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, at := range s.events {
		if at.Before(before) {
			delete(s.events, k)
			n++
		}
	}
	for k, e := range s.inbox {
		if e.Done() && e.ReceivedAt.Before(before) {
			delete(s.inbox, k)
			n++
		}
	}
	for id, seen := range s.instances {
		if seen.Before(before) {
			delete(s.instances, id)
			n++
		}
	}
	return n, nil
}

// TouchInstance implements bot.Store.
func (s *Store) TouchInstance(_ context.Context, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances[id] = now
	return nil
}

// LiveInstances implements bot.Store.
func (s *Store) LiveInstances(_ context.Context, since time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, seen := range s.instances {
		if !seen.Before(since) {
			n++
		}
	}
	return n, nil
}

// LeaveInstance implements bot.Store.
func (s *Store) LeaveInstance(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instances, id)
	return nil
}

func cloneEntry(e *bot.InboxEntry) bot.InboxEntry {
	c := *e
	c.Payload = slices.Clone(e.Payload)
	return c
}

// PutInbox implements bot.Store.
func (s *Store) PutInbox(_ context.Context, es []bot.InboxEntry) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := make([]bool, len(es))
	for i, e := range es {
		if _, ok := s.inbox[e.Key]; ok {
			continue
		}
		e.Attempts, e.DoneAt = 1, time.Time{}
		c := cloneEntry(&e)
		s.inbox[e.Key] = &c
		stored[i] = true
	}
	return stored, nil
}

// ClaimInbox implements bot.Store.
func (s *Store) ClaimInbox(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]bot.InboxEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*bot.InboxEntry
	for _, e := range s.inbox {
		if !e.Done() && e.LeaseUntil.Before(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *bot.InboxEntry) int {
		if c := a.ReceivedAt.Compare(b.ReceivedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	out := make([]bot.InboxEntry, 0, len(due))
	for _, e := range due {
		e.Owner, e.LeaseUntil = owner, now.Add(lease)
		e.Attempts++
		out = append(out, cloneEntry(e))
	}
	return out, nil
}

// heldEntry returns the entry key if owner holds it.
func (s *Store) heldEntry(key, owner string) (*bot.InboxEntry, error) {
	e, ok := s.inbox[key]
	if !ok {
		return nil, fmt.Errorf("inbox entry %s: %w", key, bot.ErrNotFound)
	}
	if e.Done() || e.Owner != owner {
		return nil, fmt.Errorf("inbox entry %s (held by %q, done %v): %w", key, e.Owner, e.Done(), bot.ErrLeaseLost)
	}
	return e, nil
}

// ExtendInbox implements bot.Store.
func (s *Store) ExtendInbox(_ context.Context, key, owner string, now time.Time, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.heldEntry(key, owner)
	if err != nil {
		return err
	}
	e.LeaseUntil = now.Add(lease)
	return nil
}

// FinishInbox implements bot.Store.
func (s *Store) FinishInbox(_ context.Context, key, owner string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.heldEntry(key, owner)
	if err != nil {
		return err
	}
	e.DoneAt, e.Owner, e.LeaseUntil, e.Payload = now, "", time.Time{}, nil
	return nil
}

// InboxEntry implements bot.Store.
func (s *Store) InboxEntry(_ context.Context, key string) (bot.InboxEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.inbox[key]
	if !ok {
		return bot.InboxEntry{}, fmt.Errorf("inbox entry %s: %w", key, bot.ErrNotFound)
	}
	return cloneEntry(e), nil
}

// PutThread implements bot.Store.
func (s *Store) PutThread(_ context.Context, t bot.Thread) (bot.Thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.threads[t.Key]; ok {
		return old, nil
	}
	s.threads[t.Key] = t
	return t, nil
}

// Thread implements bot.Store.
func (s *Store) Thread(_ context.Context, key bot.ThreadKey) (bot.Thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.threads[key]
	if !ok {
		return bot.Thread{}, fmt.Errorf("thread %v: %w", key, bot.ErrNotFound)
	}
	return t, nil
}

// CreateRun implements bot.Store.
func (s *Store) CreateRun(_ context.Context, r bot.Run, maxPerUser int) error {
	r = r.Storable()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("run %s: %w", r.ID, bot.ErrConflict)
	}
	perUser := 0
	for _, o := range s.runs {
		if !o.State.Active() {
			continue
		}
		if o.ThreadID == r.ThreadID {
			return fmt.Errorf("thread %s: %w", r.ThreadID, bot.ErrThreadBusy)
		}
		if o.Requester == r.Requester {
			perUser++
		}
	}
	if maxPerUser > 0 && perUser >= maxPerUser {
		return fmt.Errorf("user %s has %d: %w", r.Requester, perUser, bot.ErrUserLimit)
	}
	r.State = bot.StateQueued
	r.Owner, r.LeaseUntil, r.Attempt = "", time.Time{}, 0
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	c := clone(&r)
	s.runs[r.ID] = &c
	s.order = append(s.order, r.ID)
	return nil
}

func (s *Store) get(id string) (*bot.Run, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, bot.ErrNotFound)
	}
	return r, nil
}

// Run implements bot.Store.
func (s *Store) Run(_ context.Context, id string) (bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return bot.Run{}, err
	}
	return clone(r), nil
}

// LatestRun implements bot.Store.
func (s *Store) LatestRun(_ context.Context, threadID string) (bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.order) - 1; i >= 0; i-- {
		if r := s.runs[s.order[i]]; r.ThreadID == threadID {
			return clone(r), nil
		}
	}
	return bot.Run{}, fmt.Errorf("latest run of %s: %w", threadID, bot.ErrNotFound)
}

// ListRuns implements bot.Store.
func (s *Store) ListRuns(_ context.Context, f bot.RunFilter) ([]bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bot.Run
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

func acquirable(r *bot.Run, now time.Time) bool {
	switch r.State {
	case bot.StateQueued:
		return true
	case bot.StateRunning:
		return r.LeaseUntil.Before(now)
	}
	return false
}

func acquire(r *bot.Run, owner string, now time.Time, lease time.Duration) {
	r.State = bot.StateRunning
	r.Owner = owner
	r.LeaseUntil = now.Add(lease)
	r.Attempt++
	r.UpdatedAt = now
}

// AcquireRun implements bot.Store.
func (s *Store) AcquireRun(_ context.Context, id, owner string, now time.Time, lease time.Duration) (bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return bot.Run{}, err
	}
	if !acquirable(r, now) {
		return bot.Run{}, fmt.Errorf("run %s (%s by %q): %w", id, r.State, r.Owner, bot.ErrNotAcquired)
	}
	acquire(r, owner, now, lease)
	return clone(r), nil
}

// AcquireRuns implements bot.Store.
func (s *Store) AcquireRuns(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bot.Run
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

func (s *Store) held(id, owner string) (*bot.Run, error) {
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if r.State != bot.StateRunning || r.Owner != owner {
		return nil, fmt.Errorf("run %s (%s by %q): %w", id, r.State, r.Owner, bot.ErrLeaseLost)
	}
	return r, nil
}

// Heartbeat implements bot.Store.
func (s *Store) Heartbeat(_ context.Context, id, owner string, now time.Time, lease time.Duration) (bot.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return bot.Run{}, err
	}
	r.LeaseUntil = now.Add(lease)
	r.UpdatedAt = now
	return clone(r), nil
}

// ReleaseRun implements bot.Store.
func (s *Store) ReleaseRun(_ context.Context, id, owner string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return err
	}
	r.State, r.Owner, r.LeaseUntil, r.UpdatedAt = bot.StateQueued, "", time.Time{}, now
	if r.Attempt > 1 {
		// A run handed back cleanly is no failed try: its next pickup
		// does not count toward the bound (see bot.Store.ReleaseRun).
		r.Attempt--
	}
	return nil
}

// WaitRun implements bot.Store.
func (s *Store) WaitRun(_ context.Context, id, owner string, intr bot.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.held(id, owner)
	if err != nil {
		return err
	}
	r.State, r.Owner, r.LeaseUntil, r.UpdatedAt = bot.StateWaiting, "", time.Time{}, now
	r.Interrupt = &intr
	r.Decision = nil
	return nil
}

// FinishRun implements bot.Store.
func (s *Store) FinishRun(_ context.Context, id, owner string, state bot.RunState, errText string, now time.Time) error {
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

// SetStatusMessage implements bot.Store.
func (s *Store) SetStatusMessage(_ context.Context, id, ts string) (string, error) {
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

// Decide implements bot.Store.
func (s *Store) Decide(_ context.Context, runID string, d bot.Decision) (bot.Run, error) {
	d.Text = dbtext.String(d.Text)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return bot.Run{}, err
	}
	if r.Interrupt == nil || r.Interrupt.ID != d.InterruptID {
		return clone(r), fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, bot.ErrNotWaiting)
	}
	if r.Decision != nil {
		return clone(r), fmt.Errorf("run %s, interrupt %s: %w", runID, d.InterruptID, bot.ErrAlreadyDecided)
	}
	if r.State != bot.StateWaiting {
		return clone(r), fmt.Errorf("run %s is %s: %w", runID, r.State, bot.ErrNotWaiting)
	}
	dc := d
	r.Decision = &dc
	r.UpdatedAt = d.At
	if d.Action == bot.ActionCancel {
		r.State, r.FinishedAt, r.CancelRequestedBy = bot.StateCancelled, d.At, d.By
	} else {
		r.State, r.Attempt = bot.StateQueued, 0
	}
	return clone(r), nil
}

// RequestCancel implements bot.Store.
func (s *Store) RequestCancel(_ context.Context, runID, by string, now time.Time) (bot.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return bot.Run{}, false, err
	}
	switch r.State {
	case bot.StateQueued, bot.StateWaiting:
		r.State, r.Owner, r.LeaseUntil = bot.StateCancelled, "", time.Time{}
		r.CancelRequestedBy, r.UpdatedAt, r.FinishedAt = by, now, now
		return clone(r), true, nil
	case bot.StateRunning:
		if r.CancelRequestedBy == "" {
			r.CancelRequestedBy = by
			r.UpdatedAt = now
		}
		return clone(r), false, nil
	}
	return clone(r), false, fmt.Errorf("run %s is %s: %w", runID, r.State, bot.ErrFinished)
}

// RecordUpload implements bot.Store.
func (s *Store) RecordUpload(_ context.Context, u bot.Upload) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.uploads[u.RunID]; ok {
		return false, nil
	}
	s.uploads[u.RunID] = u
	return true, nil
}

// Upload implements bot.Store.
func (s *Store) Upload(_ context.Context, runID string) (bot.Upload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[runID]
	if !ok {
		return bot.Upload{}, fmt.Errorf("upload of %s: %w", runID, bot.ErrNotFound)
	}
	return u, nil
}
