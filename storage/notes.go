package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"deepresearch/agent"
	"deepresearch/storage/dbtext"
)

// Notes keeps the agent's research notes (step, query, summary, sources) in
// the database: agent.NoteStore, plus a listing for audits.
type Notes struct{ db *DB }

// Notes returns the research-notes store of db.
func (db *DB) Notes() *Notes { return &Notes{db: db} }

var _ agent.NoteStore = (*Notes)(nil)

// SaveNote stores n once per ID (saving the same note again changes nothing).
func (s *Notes) SaveNote(ctx context.Context, n agent.Note) error {
	if n.ID == "" || n.ThreadID == "" {
		return fmt.Errorf("storage: a note needs an id and a thread id")
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = time.Now()
	}
	// Summaries and queries come from the model and the web.
	n.Subtask, n.Query, n.Summary = dbtext.String(n.Subtask), dbtext.String(n.Query), dbtext.String(n.Summary)
	n.Sources = dbtext.Strings(n.Sources)
	srcs, err := json.Marshal(nonNilStrings(n.Sources))
	if err != nil {
		return err
	}
	args := []any{n.ID, n.ThreadID, n.Turn, n.Step, n.Subtask, n.Query, n.Summary, string(srcs), n.CreatedAt.UnixNano()}
	switch {
	case s.db.Postgres != nil:
		_, err = s.db.Postgres.Pool().Exec(ctx, `INSERT INTO research_notes
			(id, thread_id, turn, step, subtask, query, summary, sources, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`, args...)
	default:
		_, err = s.db.SQLite.DB().ExecContext(ctx, `INSERT INTO research_notes
			(id, thread_id, turn, step, subtask, query, summary, sources, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, args...)
	}
	if err != nil {
		return fmt.Errorf("storage: save research note: %w", err)
	}
	return nil
}

// List returns a thread's notes in research order.
func (s *Notes) List(ctx context.Context, threadID string) ([]agent.Note, error) {
	const q = `SELECT id, thread_id, turn, step, subtask, query, summary, sources, created_at
		FROM research_notes WHERE thread_id = %s ORDER BY turn, step, created_at, id`
	type scanner interface{ Scan(...any) error }
	var out []agent.Note
	add := func(r scanner) error {
		var n agent.Note
		var srcs string
		var created int64
		if err := r.Scan(&n.ID, &n.ThreadID, &n.Turn, &n.Step, &n.Subtask, &n.Query, &n.Summary, &srcs, &created); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(srcs), &n.Sources); err != nil {
			return err
		}
		n.CreatedAt = time.Unix(0, created).UTC()
		out = append(out, n)
		return nil
	}
	if s.db.Postgres != nil {
		rows, err := s.db.Postgres.Pool().Query(ctx, fmt.Sprintf(q, "$1"), threadID)
		if err != nil {
			return nil, fmt.Errorf("storage: list research notes: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := add(rows); err != nil {
				return nil, err
			}
		}
		return out, rows.Err()
	}
	rows, err := s.db.SQLite.DB().QueryContext(ctx, fmt.Sprintf(q, "?"), threadID)
	if err != nil {
		return nil, fmt.Errorf("storage: list research notes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := add(rows); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
