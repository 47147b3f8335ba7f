package sqlite

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
	return touchInstance(ctx, b.s, id, now)
}

// LiveInstances implements research.Store.
func (b *Runs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	return liveInstances(ctx, b.s, since)
}

// HeldRuns implements research.Store.
func (b *Runs) HeldRuns(ctx context.Context, owner string, now time.Time) (mine, all int, err error) {
	if err := b.s.r.QueryRowContext(ctx, `SELECT coalesce(sum(owner = ?), 0), count(*) FROM jobs
		WHERE kind = 'run' AND state = 'held' AND lease_until >= ?`, owner, jobNanos(now)).Scan(&mine, &all); err != nil {
		return 0, 0, fmt.Errorf("sqlite: held runs: %w", err)
	}
	return mine, all, nil
}

// LeaveInstance implements research.Store.
func (b *Runs) LeaveInstance(ctx context.Context, id string) error {
	return leaveInstance(ctx, b.s, id)
}
