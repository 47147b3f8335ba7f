package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The instance registry of research.Store (table bot_instances, migration 0006):
// the bot processes on this database announce themselves every few seconds
// and count each other to split Slack's per-workspace rate limits.

// TouchInstance implements research.Store.
func (b *Runs) TouchInstance(ctx context.Context, id string, now time.Time) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO bot_instances (id, seen_at) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, nanos(now)); err != nil {
			return fmt.Errorf("sqlite: touch instance: %w", err)
		}
		return nil
	})
}

// LiveInstances implements research.Store.
func (b *Runs) LiveInstances(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := b.s.r.QueryRowContext(ctx, `SELECT count(*) FROM bot_instances WHERE seen_at >= ?`, nanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: live instances: %w", err)
	}
	return n, nil
}

// LeaveInstance implements research.Store.
func (b *Runs) LeaveInstance(ctx context.Context, id string) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM bot_instances WHERE id = ?`, id); err != nil {
			return fmt.Errorf("sqlite: leave instance: %w", err)
		}
		return nil
	})
}
