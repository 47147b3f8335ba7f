package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"deepresearch/research"

	"github.com/jackc/pgx/v5"
)

// The inbox of research.Store (table bot_inbox, migration 0005). ClaimInbox locks
// its candidates with FOR UPDATE SKIP LOCKED, as AcquireRuns does; the other
// changes are single conditional statements.

const botInboxCols = `key, type, envelope_id, payload, received_at, owner, lease_until, attempts, done_at`

func scanBotInbox(row pgx.Row) (research.InboxEntry, error) {
	var e research.InboxEntry
	var received, leaseUntil, done int64
	if err := row.Scan(&e.Key, &e.Type, &e.EnvelopeID, &e.Payload, &received, &e.Owner, &leaseUntil, &e.Attempts, &done); err != nil {
		return research.InboxEntry{}, err
	}
	e.ReceivedAt, e.LeaseUntil, e.DoneAt = fromNanos(received), fromNanos(leaseUntil), fromNanos(done)
	return e, nil
}

// PutInbox implements research.Store. The entries go in one statement (arrays
// unnested); a key repeated in es is sent once.
func (b *Runs) PutInbox(ctx context.Context, es []research.InboxEntry) ([]bool, error) {
	stored := make([]bool, len(es))
	if len(es) == 0 {
		return stored, nil
	}
	var (
		keys, types, envs, owners []string
		payloads                  [][]byte
		received, leases          []int64
	)
	first := make(map[string]int, len(es)) // key -> index of its first entry
	for i, e := range es {
		if _, dup := first[e.Key]; dup {
			continue
		}
		first[e.Key] = i
		payload := e.Payload
		if payload == nil {
			payload = []byte{}
		}
		keys, types, envs, owners = append(keys, e.Key), append(types, e.Type), append(envs, e.EnvelopeID), append(owners, e.Owner)
		payloads = append(payloads, payload)
		received, leases = append(received, nanos(e.ReceivedAt)), append(leases, nanos(e.LeaseUntil))
	}
	rows, err := b.s.pool.Query(ctx, `INSERT INTO bot_inbox (`+botInboxCols+`)
		SELECT k, t, e, p, r, o, l, 1, 0
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::bigint[]) AS x(k, t, e, p, r, o, l)
		ON CONFLICT DO NOTHING RETURNING key`,
		keys, types, envs, payloads, received, owners, leases)
	if err != nil {
		return nil, fmt.Errorf("postgres: put inbox: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return nil, fmt.Errorf("postgres: put inbox: %w", err)
		}
		stored[first[key]] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: put inbox: %w", err)
	}
	return stored, nil
}

// ClaimInbox implements research.Store.
func (b *Runs) ClaimInbox(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]research.InboxEntry, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := b.s.pool.Query(ctx, `WITH c AS (
			SELECT key FROM bot_inbox WHERE done_at = 0 AND lease_until < $2
			ORDER BY received_at, key LIMIT $4 FOR UPDATE SKIP LOCKED
		)
		UPDATE bot_inbox i SET owner = $1, lease_until = $3, attempts = i.attempts + 1
		FROM c WHERE i.key = c.key
		RETURNING i.key, i.type, i.envelope_id, i.payload, i.received_at, i.owner, i.lease_until, i.attempts, i.done_at`,
		owner, nanos(now), nanos(now.Add(lease)), lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim inbox: %w", err)
	}
	defer rows.Close()
	var got []research.InboxEntry
	for rows.Next() {
		e, err := scanBotInbox(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim inbox: %w", err)
		}
		got = append(got, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim inbox: %w", err)
	}
	sort.Slice(got, func(i, j int) bool {
		if !got[i].ReceivedAt.Equal(got[j].ReceivedAt) {
			return got[i].ReceivedAt.Before(got[j].ReceivedAt)
		}
		return got[i].Key < got[j].Key
	})
	return got, nil
}

// heldInbox runs the update q fenced by owner (q ends with botInboxHeld,
// its last two parameters being the key and the owner) and maps "no row" to
// ErrNotFound or ErrLeaseLost.
func (b *Runs) heldInbox(ctx context.Context, what, key, owner, q string, args ...any) error {
	args = append(args, key, owner)
	tag, err := b.s.pool.Exec(ctx, fmt.Sprintf(q, len(args)-1, len(args)), args...)
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var curOwner string
	var done int64
	err = b.s.pool.QueryRow(ctx, `SELECT owner, done_at FROM bot_inbox WHERE key = $1`, key).Scan(&curOwner, &done)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%s: %w", what, research.ErrNotFound)
	case err != nil:
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	return fmt.Errorf("%s (held by %q, done %v): %w", what, curOwner, done != 0, research.ErrLeaseLost)
}

// botInboxHeld fences an update by owner; heldInbox fills in the parameter numbers.
const botInboxHeld = ` WHERE key = $%d AND owner = $%d AND done_at = 0`

// ExtendInbox implements research.Store.
func (b *Runs) ExtendInbox(ctx context.Context, key, owner string, now time.Time, lease time.Duration) error {
	return b.heldInbox(ctx, "extend inbox entry "+key, key, owner,
		`UPDATE bot_inbox SET lease_until = $1`+botInboxHeld, nanos(now.Add(lease)))
}

// FinishInbox implements research.Store.
func (b *Runs) FinishInbox(ctx context.Context, key, owner string, now time.Time) error {
	return b.heldInbox(ctx, "finish inbox entry "+key, key, owner,
		`UPDATE bot_inbox SET done_at = $1, owner = '', lease_until = 0, payload = ''::bytea`+botInboxHeld, max(nanos(now), 1))
}

// InboxEntry implements research.Store.
func (b *Runs) InboxEntry(ctx context.Context, key string) (research.InboxEntry, error) {
	e, err := scanBotInbox(b.s.pool.QueryRow(ctx, `SELECT `+botInboxCols+` FROM bot_inbox WHERE key = $1`, key))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return research.InboxEntry{}, fmt.Errorf("inbox entry %s: %w", key, research.ErrNotFound)
	case err != nil:
		return research.InboxEntry{}, fmt.Errorf("postgres: inbox entry %s: %w", key, err)
	}
	return e, nil
}
