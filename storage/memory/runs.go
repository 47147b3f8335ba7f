// Package memory keeps the bot's runs, inbox and schedules in memory: the
// reference implementation of the SQL stores' rules, for tests and
// single-process experiments. Several bots sharing one Runs behave like
// replicas sharing a database.
package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/dbtext"
	"deepresearch/storage/jobmap"
)

// Runs is the bot's store of runs, threads, the inbox and events in
// memory. The zero value is not usable; call NewRuns.
//
// A run is its record in runs (everything but the lease, its detail
// normalised as the SQL stores keep it: jobmap.CopyRun) and a KindRun job
// on q that holds its lease and state (jobmap.RunJob); the inbox, the event keys and the
// instances are q's too (inbox.go). q's mutex guards everything, so a
// record and its job change together; the lease rules are jobs.go's.
type Runs struct {
	q       *Jobs
	threads map[research.ThreadKey]research.Thread
	runs    map[string]*research.Run // without the lease fields
	order   []string                 // run ids in creation order
	uploads map[string]research.Upload
	staged  map[string][]string // run id -> staged file ids, oldest first
}

// NewRuns returns an empty Runs.
func NewRuns() *Runs {
	return &Runs{
		q:       NewJobs(),
		threads: map[research.ThreadKey]research.Thread{},
		runs:    map[string]*research.Run{},
		uploads: map[string]research.Upload{},
		staged:  map[string][]string{},
	}
}

// withLease returns a copy of the record r (its detail through the SQL
// stores' codec, so it shares nothing with the record) with the lease
// fields of its job; the caller holds q.mu.
func (s *Runs) withLease(r *research.Run) (research.Run, error) {
	c, err := jobmap.CopyRun(*r)
	if err != nil {
		return research.Run{}, err
	}
	if j, err := s.q.get(jobs.KindRun, r.ID); err == nil { // every record has its job
		jobmap.RunLease(&c, j)
	}
	return c, nil
}

// PutThread implements research.Store.
func (s *Runs) PutThread(_ context.Context, t research.Thread) (research.Thread, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if old, ok := s.threads[t.Key]; ok {
		return old, nil
	}
	s.threads[t.Key] = t
	return t, nil
}

// Thread implements research.Store.
func (s *Runs) Thread(_ context.Context, key research.ThreadKey) (research.Thread, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	t, ok := s.threads[key]
	if !ok {
		return research.Thread{}, fmt.Errorf("thread %v: %w", key, research.ErrNotFound)
	}
	return t, nil
}

// CreateRun implements research.Store: the checks (id, busy thread,
// per-user limit, in that order), the record and a ready job at once.
func (s *Runs) CreateRun(_ context.Context, r research.Run, maxPerUser int) error {
	r = dbtext.Run(r)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("run %s: %w", r.ID, research.ErrConflict)
	}
	perUser := 0
	for _, o := range s.runs {
		if j := s.q.jobs[jobKey{jobs.KindRun, o.ID}]; !jobmap.RunState(j.State, j.Payload).Active() {
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
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	r.State, r.Owner, r.LeaseUntil, r.Attempt, r.FinishedAt, r.Error = "", "", time.Time{}, 0, time.Time{}, ""
	c, err := jobmap.CopyRun(r) // the detail as the SQL stores keep it
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	s.q.drop(jobs.KindRun, r.ID) // never there: runs are not deleted
	if _, err := s.q.put([]jobs.Job{jobmap.RunJob(r)}); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
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
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return research.Run{}, err
	}
	return s.withLease(r)
}

// LatestRun implements research.Store.
func (s *Runs) LatestRun(_ context.Context, threadID string) (research.Run, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	for i := len(s.order) - 1; i >= 0; i-- {
		if r := s.runs[s.order[i]]; r.ThreadID == threadID {
			return s.withLease(r)
		}
	}
	return research.Run{}, fmt.Errorf("latest run of %s: %w", threadID, research.ErrNotFound)
}

// ListRuns implements research.Store.
func (s *Runs) ListRuns(_ context.Context, f research.RunFilter) ([]research.Run, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var out []research.Run
	for i := len(s.order) - 1; i >= 0; i-- {
		r := s.runs[s.order[i]]
		if f.Requester != "" && r.Requester != f.Requester {
			continue
		}
		if f.Channel != "" && r.Key.Channel != f.Channel {
			continue
		}
		c, err := s.withLease(r)
		if err != nil {
			return nil, err
		}
		if len(f.States) > 0 && !slices.Contains(f.States, c.State) {
			continue
		}
		out = append(out, c)
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

// AcquireRun implements research.Store: ClaimKey.
func (s *Runs) AcquireRun(_ context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return research.Run{}, err
	}
	if _, err := s.q.claimKey(jobs.KindRun, id, owner, now, lease, 0); err != nil {
		return research.Run{}, fmt.Errorf("run %s: %w: %w", id, research.ErrNotAcquired, err)
	}
	return s.withLease(r)
}

// AcquireRuns implements research.Store: Claim, oldest first.
func (s *Runs) AcquireRuns(_ context.Context, kind, owner string, now time.Time, lease time.Duration, limit int) ([]research.Run, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	var out []research.Run
	for _, j := range s.q.claimAllOf(jobs.KindRun, &kind, owner, now, lease, limit, 0) {
		r, err := s.get(j.Key)
		if err != nil {
			return nil, err
		}
		c, err := s.withLease(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Heartbeat implements research.Store: Extend.
func (s *Runs) Heartbeat(_ context.Context, id, owner string, now time.Time, lease time.Duration) (research.Run, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return research.Run{}, err
	}
	if _, err := s.q.extend(jobs.KindRun, id, owner, now, lease); err != nil {
		return research.Run{}, jobmap.ResearchErr(err)
	}
	return s.withLease(r)
}

// ReleaseRun implements research.Store: Release (a clean hand-back gives
// its pickup back).
func (s *Runs) ReleaseRun(_ context.Context, id, owner string, now time.Time) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	_, err := s.q.release(jobs.KindRun, id, owner, now)
	return jobmap.ResearchErr(err)
}

// WaitRun implements research.Store: Park, and the interrupt recorded with
// the decision cleared.
func (s *Runs) WaitRun(_ context.Context, id, owner string, intr research.PendingInterrupt, now time.Time) error {
	intr.Text = dbtext.String(intr.Text)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	next := *r
	next.Interrupt, next.Decision = &intr, nil
	c, err := jobmap.CopyRun(next)
	if err != nil {
		return fmt.Errorf("wait run: %w", err)
	}
	if _, err := s.q.park(jobs.KindRun, id, owner, nil, now); err != nil {
		return jobmap.ResearchErr(err)
	}
	*r = c
	return nil
}

// FinishRun implements research.Store: Finish.
func (s *Runs) FinishRun(_ context.Context, id, owner string, state research.RunState, errText string, now time.Time) error {
	errText = dbtext.String(errText)
	js, payload, err := jobmap.RunFinish(state)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	_, err = s.q.finishHeld(jobs.KindRun, id, owner, js, errText, payload, now)
	return jobmap.ResearchErr(err)
}

// SetStatusMessage implements research.Store.
func (s *Runs) SetStatusMessage(_ context.Context, id, ts string) (string, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return "", err
	}
	if r.StatusTS == "" {
		r.StatusTS = ts
	}
	return r.StatusTS, nil
}

// Decide implements research.Store. The checks come first, in
// jobmap.DecideRefusal's order (the SQL stores keep it): the run exists; it
// waits on d's interrupt (ErrNotWaiting); no decision yet
// (ErrAlreadyDecided); its job is parked (ErrNotWaiting). Then a cancel
// fails the job as cancelled (Cancel), any other action makes it ready with
// its attempts reset (Unpark), and the decision is recorded.
func (s *Runs) Decide(_ context.Context, runID string, d research.Decision) (research.Run, error) {
	d.Text = dbtext.String(d.Text)
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return research.Run{}, err
	}
	cur, err := s.withLease(r)
	if err != nil {
		return research.Run{}, err
	}
	if err := jobmap.DecideRefusal(cur, d); err != nil {
		return cur, err
	}
	next := *r
	next.Decision, next.UpdatedAt = &d, d.At
	if d.Action == research.ActionCancel {
		next.CancelRequestedBy = d.By
	}
	c, err := jobmap.CopyRun(next)
	if err != nil {
		return cur, fmt.Errorf("decide: %w", err)
	}
	if d.Action == research.ActionCancel {
		err = s.q.cancel(jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), d.At)
	} else {
		_, err = s.q.unpark(jobs.KindRun, runID, nil, d.At)
	}
	if err != nil {
		return cur, fmt.Errorf("run %s is %s: %w: %w", runID, cur.State, research.ErrNotWaiting, err)
	}
	*r = c
	return s.withLease(r)
}

// RequestCancel implements research.Store: a queued or waiting run's job is
// failed as cancelled (Cancel); a running run gets CancelRequestedBy (its
// owner sees it in Heartbeat); a finished run gets ErrFinished.
func (s *Runs) RequestCancel(_ context.Context, runID, by string, now time.Time) (research.Run, bool, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	r, err := s.get(runID)
	if err != nil {
		return research.Run{}, false, err
	}
	cur, err := s.withLease(r)
	if err != nil {
		return research.Run{}, false, err
	}
	switch cur.State {
	case research.StateQueued, research.StateWaiting:
		if err := s.q.cancel(jobs.KindRun, runID, "", []byte(jobmap.RunCancelled), now); err != nil {
			return research.Run{}, false, fmt.Errorf("cancel run %s: %w", runID, err)
		}
		r.CancelRequestedBy, r.UpdatedAt = by, now
		c, err := s.withLease(r)
		return c, err == nil, err
	case research.StateRunning:
		if r.CancelRequestedBy == "" {
			r.CancelRequestedBy, r.UpdatedAt = by, now
		}
		c, err := s.withLease(r)
		return c, false, err
	}
	return cur, false, fmt.Errorf("run %s is %s: %w", runID, cur.State, research.ErrFinished)
}

// RecordUpload implements research.Store.
func (s *Runs) RecordUpload(_ context.Context, u research.Upload) (bool, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if _, ok := s.uploads[u.RunID]; ok {
		return false, nil
	}
	s.uploads[u.RunID] = u
	return true, nil
}

// Upload implements research.Store.
func (s *Runs) Upload(_ context.Context, runID string) (research.Upload, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	u, ok := s.uploads[runID]
	if !ok {
		return research.Upload{}, fmt.Errorf("upload of %s: %w", runID, research.ErrNotFound)
	}
	return u, nil
}

// StageUpload implements research.Store.
func (s *Runs) StageUpload(_ context.Context, runID, fileID string, _ time.Time) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	if !slices.Contains(s.staged[runID], fileID) {
		s.staged[runID] = append(s.staged[runID], fileID)
	}
	return nil
}

// StagedUploads implements research.Store.
func (s *Runs) StagedUploads(_ context.Context, runID string) ([]string, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return slices.Clone(s.staged[runID]), nil
}

// UnstageUpload implements research.Store.
func (s *Runs) UnstageUpload(_ context.Context, runID, fileID string) error {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	s.staged[runID] = slices.DeleteFunc(s.staged[runID], func(id string) bool { return id == fileID })
	if len(s.staged[runID]) == 0 {
		delete(s.staged, runID)
	}
	return nil
}
