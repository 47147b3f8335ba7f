package sqlstore

import (
	"context"
	"fmt"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/storage/jobmap"
)

// The inbox and the processed event keys of research.Store, on the jobs
// table (migration 0008): an entry is a KindEnvelope job whose payload is
// the envelope (jobmap.InboxJob), an event key a Done KindEvent job. The
// lease rules are jobs.go's.

// PutInbox implements research.Store.
func (b *Runs) PutInbox(ctx context.Context, es []research.InboxEntry) ([]bool, error) {
	js := make([]jobs.Job, len(es))
	for i, e := range es {
		js[i] = jobmap.InboxJob(e)
	}
	stored, err := writeValue(ctx, b.db, func(q Querier) ([]bool, error) { return b.db.putJobs(ctx, q, js) })
	if err != nil {
		return nil, fmt.Errorf("put inbox: %w", err)
	}
	return stored, nil
}

// ClaimInbox implements research.Store.
func (b *Runs) ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.InboxEntry, error) {
	got, err := writeValue(ctx, b.db, func(q Querier) ([]jobs.Job, error) {
		return b.db.claimJobs(ctx, q, jobs.KindEnvelope, owner, now, lease, limit, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("claim inbox: %w", err)
	}
	out, err := jobmap.InboxEntries(got)
	if err != nil {
		return nil, b.db.errorf("claim inbox: %w", err)
	}
	return out, nil
}

// ExtendInbox implements research.Store.
func (b *Runs) ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error {
	return b.db.Write(ctx, func(q Querier) error {
		_, err := b.db.extendJob(ctx, q, jobs.KindEnvelope, key, owner, now, lease)
		return jobmap.ResearchErr(err)
	})
}

// FinishInbox implements research.Store: the job is finished with the
// envelope's body dropped from its payload (its type and id never change,
// so reading them first needs no lock).
func (b *Runs) FinishInbox(ctx context.Context, key, owner string, now time.Time) error {
	return b.db.Write(ctx, func(q Querier) error {
		j, err := b.db.getJob(ctx, q, jobs.KindEnvelope, key)
		if err != nil {
			return jobmap.ResearchErr(err)
		}
		p, err := jobmap.InboxDonePayload(j)
		if err != nil {
			return b.db.errorf("finish inbox: %w", err)
		}
		_, err = b.db.finishJob(ctx, q, jobs.KindEnvelope, key, owner, jobs.Done, "", p, now)
		return jobmap.ResearchErr(err)
	})
}

// InboxEntry implements research.Store.
func (b *Runs) InboxEntry(ctx context.Context, key string) (research.InboxEntry, error) {
	j, err := b.db.getJob(ctx, b.db.Read(), jobs.KindEnvelope, key)
	if err != nil {
		return research.InboxEntry{}, jobmap.ResearchErr(err)
	}
	e, err := jobmap.InboxEntry(j)
	if err != nil {
		return research.InboxEntry{}, b.db.errorf("%w", err)
	}
	return e, nil
}

// ClaimEvent implements research.Store.
func (b *Runs) ClaimEvent(ctx context.Context, key string, at time.Time) (bool, error) {
	stored, err := writeValue(ctx, b.db, func(q Querier) ([]bool, error) {
		return b.db.putJobs(ctx, q, []jobs.Job{jobmap.EventJob(key, at)})
	})
	if err != nil {
		return false, fmt.Errorf("claim event: %w", err)
	}
	return stored[0], nil
}

// PruneEvents implements research.Store: finished envelopes and event keys,
// and instances, not the other kinds of jobs.
func (b *Runs) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	n, err := b.db.pruneJobs(ctx, before, jobs.KindEnvelope, jobs.KindEvent)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
