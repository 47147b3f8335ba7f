package postgres

import (
	"context"
	"fmt"
	"time"
)

// The instance registry of research.Store (table bot_instances, migration 0006):
// the bot processes on this database announce themselves every few seconds
// and count each other to split Slack's per-workspace rate limits. Each
// method is one statement.

// TouchInstance implements research.Store.
func (b *Runs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	if _, err := b.s.pool.Exec(ctx, `INSERT INTO bot_instances (id, seen_at) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, nanos(now)); err != nil {
		return fmt.Errorf("postgres: touch instance: %w", err)
	}
	return nil
}

// LiveInstances implements research.Store.
func (b *Runs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := b.s.pool.QueryRow(ctx, `SELECT count(*) FROM bot_instances WHERE seen_at >= $1`, nanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: live instances: %w", err)
	}
	return n, nil
}

// LeaveInstance implements research.Store.
func (b *Runs) LeaveInstance(ctx context.Context, id string) error {
	if _, err := b.s.pool.Exec(ctx, `DELETE FROM bot_instances WHERE id = $1`, id); err != nil {
		return fmt.Errorf("postgres: leave instance: %w", err)
	}
	return nil
}
