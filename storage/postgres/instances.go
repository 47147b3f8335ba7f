package postgres

import (
	"context"
	"fmt"
	"time"
)

// The instance registry of research.Store, on the instances table of the
// jobs queue (migration 0007): the bot processes on this database announce
// themselves every few seconds and count each other to split Slack's
// per-workspace rate limits.

// TouchInstance implements research.Store.
func (b *Runs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return touchInstance(ctx, b.s.pool, id, now)
}

// LiveInstances implements research.Store.
func (b *Runs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	return liveInstances(ctx, b.s.pool, since)
}

// HeldRuns implements research.Store.
func (b *Runs) HeldRuns(ctx context.Context, owner string, now time.Time) (mine, all int, err error) {
	var m, a int64
	if err := b.s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE owner = $1), count(*) FROM jobs
		WHERE kind = 'run' AND state = 'held' AND lease_until >= $2`, owner, jobNanos(now)).Scan(&m, &a); err != nil {
		return 0, 0, fmt.Errorf("postgres: held runs: %w", err)
	}
	return int(m), int(a), nil
}

// LeaveInstance implements research.Store.
func (b *Runs) LeaveInstance(ctx context.Context, id string) error {
	return leaveInstance(ctx, b.s.pool, id)
}
