package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"deepresearch/jobs"
	"deepresearch/research"
	"deepresearch/slackstate"
	"deepresearch/storage/jobmap"
)

// Slack is slackstate.Store on a DB: the Slack bot's own records. The
// thread mapping is the table bot_threads, the runs' places bot_places
// (migration 0017), the replica registry the table instances; the inbox
// and the processed event keys are jobs (migration 0008): an entry is a
// KindEnvelope job whose payload is the envelope (jobmap.InboxJob), an
// event key a Done KindEvent job. The lease rules are jobs.go's.
// CreateRun is Runs.CreateRun with the place inserted in its transaction.
type Slack struct{ instances }

var _ slackstate.Store = (*Slack)(nil)

// NewSlack returns the slackstate.Store on db.
func NewSlack(db *DB) *Slack { return &Slack{instances{db}} }

const botThreadCols = `team, channel, thread_ts, thread_id, requester, dm, created_at`

func (db *DB) thread(ctx context.Context, q Querier, key slackstate.ThreadKey) (slackstate.Thread, error) {
	var t slackstate.Thread
	var created int64
	err := q.QueryRow(ctx, `SELECT `+botThreadCols+` FROM bot_threads WHERE team = $1 AND channel = $2 AND thread_ts = $3`,
		key.Team, key.Channel, key.ThreadTS).Scan(&t.Key.Team, &t.Key.Channel, &t.Key.ThreadTS, &t.ThreadID, &t.Requester, &t.DM, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return slackstate.Thread{}, fmt.Errorf("thread %v: %w", key, slackstate.ErrNotFound)
	case err != nil:
		return slackstate.Thread{}, db.errorf("thread: %w", err)
	}
	t.CreatedAt = fromNanos(created)
	return t, nil
}

// PutThread implements slackstate.Store. On PostgreSQL the insert waits
// for a concurrent insert of the same key to finish; the read that follows
// (a new snapshot) then sees whichever mapping was stored first.
func (b *Slack) PutThread(ctx context.Context, t slackstate.Thread) (slackstate.Thread, error) {
	return writeValue(ctx, b.db, func(q Querier) (slackstate.Thread, error) {
		if _, err := q.Exec(ctx, `INSERT INTO bot_threads (`+botThreadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			t.Key.Team, t.Key.Channel, t.Key.ThreadTS, t.ThreadID, t.Requester, t.DM, nanos(t.CreatedAt)); err != nil {
			return slackstate.Thread{}, b.db.errorf("put thread: %w", err)
		}
		return b.db.thread(ctx, q, t.Key)
	})
}

// Thread implements slackstate.Store.
func (b *Slack) Thread(ctx context.Context, key slackstate.ThreadKey) (slackstate.Thread, error) {
	return b.db.thread(ctx, b.db.Read(), key)
}

// CreateRun implements slackstate.Store: Runs.CreateRun's transaction
// (under its locks on PostgreSQL), which inserts the place after the run.
func (b *Slack) CreateRun(ctx context.Context, r research.Run, p slackstate.Place, maxPerUser int) error {
	return b.db.createRun(ctx, r, maxPerUser, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO bot_places (run_id, team, channel, thread_ts, stream, status_ts)
			VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, p.Key.Team, p.Key.Channel, p.Key.ThreadTS, p.Stream, p.StatusTS); err != nil {
			return b.db.errorf("create run %s: place: %w", r.ID, err)
		}
		return nil
	})
}

// Place implements slackstate.Store.
func (b *Slack) Place(ctx context.Context, runID string) (slackstate.Place, error) {
	p := slackstate.Place{RunID: runID}
	err := b.db.Read().QueryRow(ctx, `SELECT team, channel, thread_ts, stream, status_ts FROM bot_places WHERE run_id = $1`, runID).
		Scan(&p.Key.Team, &p.Key.Channel, &p.Key.ThreadTS, &p.Stream, &p.StatusTS)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return slackstate.Place{}, fmt.Errorf("place of run %s: %w", runID, slackstate.ErrNotFound)
	case err != nil:
		return slackstate.Place{}, b.db.errorf("place: %w", err)
	}
	return p, nil
}

// SetStatusMessage implements slackstate.Store: one upsert, which inserts
// a place without a thread only for a run that exists.
func (b *Slack) SetStatusMessage(ctx context.Context, runID, ts string) (string, error) {
	return writeValue(ctx, b.db, func(q Querier) (string, error) {
		var out string
		err := q.QueryRow(ctx, `INSERT INTO bot_places (run_id, team, channel, thread_ts, stream, status_ts)
			SELECT id, '', '', '', false, CAST($2 AS TEXT) FROM bot_runs WHERE id = $1
			ON CONFLICT (run_id) DO UPDATE SET status_ts = CASE WHEN bot_places.status_ts = '' THEN excluded.status_ts ELSE bot_places.status_ts END
			RETURNING status_ts`, runID, ts).Scan(&out)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return "", fmt.Errorf("run %s: %w", runID, slackstate.ErrNotFound)
		case err != nil:
			return "", b.db.errorf("set status message: %w", err)
		}
		return out, nil
	})
}

// StatusMessage implements slackstate.Store.
func (b *Slack) StatusMessage(ctx context.Context, runID string) (string, error) {
	p, err := b.Place(ctx, runID)
	switch {
	case errors.Is(err, slackstate.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return p.StatusTS, nil
}

// PutInbox implements slackstate.Store.
func (b *Slack) PutInbox(ctx context.Context, es []slackstate.InboxEntry) ([]bool, error) {
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

// ClaimInbox implements slackstate.Store.
func (b *Slack) ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]slackstate.InboxEntry, error) {
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

// ExtendInbox implements slackstate.Store.
func (b *Slack) ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error {
	return b.db.Write(ctx, func(q Querier) error {
		_, err := b.db.extendJob(ctx, q, jobs.KindEnvelope, key, owner, now, lease)
		return jobmap.ResearchErr(err)
	})
}

// FinishInbox implements slackstate.Store: the job is finished with the
// envelope's body dropped from its payload (its type and id never change,
// so reading them first needs no lock).
func (b *Slack) FinishInbox(ctx context.Context, key, owner string, now time.Time) error {
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

// InboxEntry implements slackstate.Store.
func (b *Slack) InboxEntry(ctx context.Context, key string) (slackstate.InboxEntry, error) {
	j, err := b.db.getJob(ctx, b.db.Read(), jobs.KindEnvelope, key)
	if err != nil {
		return slackstate.InboxEntry{}, jobmap.ResearchErr(err)
	}
	e, err := jobmap.InboxEntry(j)
	if err != nil {
		return slackstate.InboxEntry{}, b.db.errorf("%w", err)
	}
	return e, nil
}

// ClaimEvent implements slackstate.Store.
func (b *Slack) ClaimEvent(ctx context.Context, key string, at time.Time) (bool, error) {
	stored, err := writeValue(ctx, b.db, func(q Querier) ([]bool, error) {
		return b.db.putJobs(ctx, q, []jobs.Job{jobmap.EventJob(key, at)})
	})
	if err != nil {
		return false, fmt.Errorf("claim event: %w", err)
	}
	return stored[0], nil
}

// PruneEvents implements slackstate.Store: finished envelopes and event keys,
// and instances, not the other kinds of jobs.
func (b *Slack) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	n, err := b.db.pruneJobs(ctx, before, jobs.KindEnvelope, jobs.KindEvent)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
