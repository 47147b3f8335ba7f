package memory

import (
	"context"
	"fmt"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/jobmap"
)

// The inbox, the processed event keys and the instance registry of
// research.Store, on the Runs' jobs queue: an entry is a KindEnvelope job
// whose payload is the envelope (jobmap.InboxJob), an event key a Done
// KindEvent job. The lease rules are jobs.go's.

// ClaimEvent implements research.Store.
func (s *Runs) ClaimEvent(ctx context.Context, key string, at time.Time) (bool, error) {
	stored, err := s.q.Put(ctx, []jobs.Job{jobmap.EventJob(key, at)})
	if err != nil {
		return false, fmt.Errorf("claim event: %w", err)
	}
	return stored[0], nil
}

// PruneEvents implements research.Store: finished envelopes and event keys,
// and instances, not the other kinds of jobs.
func (s *Runs) PruneEvents(_ context.Context, before time.Time) (int, error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.q.prune(before, jobs.KindEnvelope, jobs.KindEvent), nil
}

// TouchInstance implements research.Store.
func (s *Runs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return s.q.TouchInstance(ctx, id, now)
}

// HeldRuns implements research.Store.
func (s *Runs) HeldRuns(_ context.Context, owner string, now time.Time) (mine, all int, err error) {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	for k := range s.q.live {
		j := s.q.jobs[k]
		if k.kind != jobs.KindRun || j.State != jobs.Held || j.LeaseUntil.Before(now) {
			continue
		}
		all++
		if j.Owner == owner {
			mine++
		}
	}
	return mine, all, nil
}

// LiveInstances implements research.Store.
func (s *Runs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	return s.q.LiveInstances(ctx, since)
}

// LeaveInstance implements research.Store.
func (s *Runs) LeaveInstance(ctx context.Context, id string) error {
	return s.q.LeaveInstance(ctx, id)
}

// PutInbox implements research.Store.
func (s *Runs) PutInbox(ctx context.Context, es []research.InboxEntry) ([]bool, error) {
	js := make([]jobs.Job, len(es))
	for i, e := range es {
		js[i] = jobmap.InboxJob(e)
	}
	stored, err := s.q.Put(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("put inbox: %w", err)
	}
	return stored, nil
}

// ClaimInbox implements research.Store.
func (s *Runs) ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.InboxEntry, error) {
	got, err := s.q.Claim(ctx, jobs.KindEnvelope, owner, now, lease, limit, 0)
	if err != nil {
		return nil, fmt.Errorf("claim inbox: %w", err)
	}
	out, err := jobmap.InboxEntries(got)
	if err != nil {
		return nil, fmt.Errorf("memory: claim inbox: %w", err)
	}
	return out, nil
}

// ExtendInbox implements research.Store.
func (s *Runs) ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error {
	_, err := s.q.Extend(ctx, jobs.KindEnvelope, key, owner, now, lease)
	return jobmap.ResearchErr(err)
}

// FinishInbox implements research.Store: the job is finished with the
// envelope's body dropped from its payload (its type and id never change,
// so reading them first needs no lock).
func (s *Runs) FinishInbox(ctx context.Context, key, owner string, now time.Time) error {
	j, err := s.q.Get(ctx, jobs.KindEnvelope, key)
	if err != nil {
		return jobmap.ResearchErr(err)
	}
	p, err := jobmap.InboxDonePayload(j)
	if err != nil {
		return fmt.Errorf("memory: finish inbox: %w", err)
	}
	return jobmap.ResearchErr(s.q.Finish(ctx, jobs.KindEnvelope, key, owner, jobs.Done, "", p, now))
}

// InboxEntry implements research.Store.
func (s *Runs) InboxEntry(ctx context.Context, key string) (research.InboxEntry, error) {
	j, err := s.q.Get(ctx, jobs.KindEnvelope, key)
	if err != nil {
		return research.InboxEntry{}, jobmap.ResearchErr(err)
	}
	e, err := jobmap.InboxEntry(j)
	if err != nil {
		return research.InboxEntry{}, fmt.Errorf("memory: %w", err)
	}
	return e, nil
}
