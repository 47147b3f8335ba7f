package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"deepresearch/research"
)

// The inbox of research.Store (table bot_inbox, migration 0005).

const botInboxCols = `key, type, envelope_id, payload, received_at, owner, lease_until, attempts, done_at`

func scanBotInbox(sc botScanner) (research.InboxEntry, error) {
	var e research.InboxEntry
	var received, leaseUntil, done int64
	if err := sc.Scan(&e.Key, &e.Type, &e.EnvelopeID, &e.Payload, &received, &e.Owner, &leaseUntil, &e.Attempts, &done); err != nil {
		return research.InboxEntry{}, err
	}
	e.ReceivedAt, e.LeaseUntil, e.DoneAt = fromNanos(received), fromNanos(leaseUntil), fromNanos(done)
	return e, nil
}

// PutInbox implements research.Store.
func (b *Runs) PutInbox(ctx context.Context, es []research.InboxEntry) ([]bool, error) {
	stored := make([]bool, len(es))
	if len(es) == 0 {
		return stored, nil
	}
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO bot_inbox (`+botInboxCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0) ON CONFLICT DO NOTHING`)
		if err != nil {
			return fmt.Errorf("sqlite: put inbox: %w", err)
		}
		defer st.Close()
		for i, e := range es {
			res, err := st.ExecContext(ctx, e.Key, e.Type, e.EnvelopeID, nonNil(e.Payload), nanos(e.ReceivedAt), e.Owner, nanos(e.LeaseUntil))
			if err != nil {
				return fmt.Errorf("sqlite: put inbox %s: %w", e.Key, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlite: put inbox %s: %w", e.Key, err)
			}
			stored[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// ClaimInbox implements research.Store.
func (b *Runs) ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.InboxEntry, error) {
	if limit <= 0 {
		limit = -1
	}
	var got []research.InboxEntry
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		got = got[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE bot_inbox SET owner = ?1, lease_until = ?3, attempts = attempts + 1
			WHERE key IN (
				SELECT key FROM bot_inbox WHERE done_at = 0 AND lease_until < ?2 ORDER BY received_at, key LIMIT ?4
			) RETURNING `+botInboxCols, owner, nanos(now), nanos(now.Add(lease)), limit)
		if err != nil {
			return fmt.Errorf("sqlite: claim inbox: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanBotInbox(rows)
			if err != nil {
				return fmt.Errorf("sqlite: claim inbox: %w", err)
			}
			got = append(got, e)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: claim inbox: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(got, func(i, j int) bool {
		if !got[i].ReceivedAt.Equal(got[j].ReceivedAt) {
			return got[i].ReceivedAt.Before(got[j].ReceivedAt)
		}
		return got[i].Key < got[j].Key
	})
	return got, nil
}

// heldInbox runs the update q (whose last two parameters are the key and
// the owner, and which changes only an entry owner holds) and maps "no row"
// to ErrNotFound or ErrLeaseLost.
func (b *Runs) heldInbox(ctx context.Context, what, key, owner, q string, args ...any) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, append(args, key, owner)...)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var curOwner string
		var done int64
		err = tx.QueryRowContext(ctx, `SELECT owner, done_at FROM bot_inbox WHERE key = ?`, key).Scan(&curOwner, &done)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%s: %w", what, research.ErrNotFound)
		case err != nil:
			return fmt.Errorf("sqlite: %s: %w", what, err)
		}
		return fmt.Errorf("%s (held by %q, done %v): %w", what, curOwner, done != 0, research.ErrLeaseLost)
	})
}

const botInboxHeld = ` WHERE key = ? AND owner = ? AND done_at = 0`

// ExtendInbox implements research.Store.
func (b *Runs) ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error {
	return b.heldInbox(ctx, "extend inbox entry "+key, key, owner,
		`UPDATE bot_inbox SET lease_until = ?`+botInboxHeld, nanos(now.Add(lease)))
}

// FinishInbox implements research.Store.
func (b *Runs) FinishInbox(ctx context.Context, key, owner string, now time.Time) error {
	return b.heldInbox(ctx, "finish inbox entry "+key, key, owner,
		`UPDATE bot_inbox SET done_at = ?, owner = '', lease_until = 0, payload = X''`+botInboxHeld, max(nanos(now), 1))
}

// InboxEntry implements research.Store.
func (b *Runs) InboxEntry(ctx context.Context, key string) (research.InboxEntry, error) {
	e, err := scanBotInbox(b.s.r.QueryRowContext(ctx, `SELECT `+botInboxCols+` FROM bot_inbox WHERE key = ?`, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return research.InboxEntry{}, fmt.Errorf("inbox entry %s: %w", key, research.ErrNotFound)
	case err != nil:
		return research.InboxEntry{}, fmt.Errorf("sqlite: inbox entry %s: %w", key, err)
	}
	return e, nil
}
