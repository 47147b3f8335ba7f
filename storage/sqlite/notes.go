package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"deepresearch/agent"
	"deepresearch/storage/dbtext"
)

// Notes keeps the agent's research notes (step, query, summary, sources)
// in the research_notes table: agent.NoteStore, plus a listing for audits.
type Notes struct{ s *Store }

// NewNotes returns the notes store on s's database.
func NewNotes(s *Store) *Notes { return &Notes{s: s} }

// SaveNote stores n once per ID (saving the same note again changes nothing).
func (n *Notes) SaveNote(ctx context.Context, note agent.Note) error {
	args, err := noteArgs(note)
	if err != nil {
		return err
	}
	return n.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO research_notes
			(id, thread_id, turn, step, subtask, query, summary, sources, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, args...); err != nil {
			return fmt.Errorf("sqlite: save research note: %w", err)
		}
		return nil
	})
}

// List returns a thread's notes in research order.
func (n *Notes) List(ctx context.Context, threadID string) ([]agent.Note, error) {
	rows, err := n.s.r.QueryContext(ctx, `SELECT id, thread_id, turn, step, subtask, query, summary, sources, created_at
		FROM research_notes WHERE thread_id = ? ORDER BY turn, step, created_at, id`, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list research notes: %w", err)
	}
	defer rows.Close()
	var out []agent.Note
	for rows.Next() {
		var note agent.Note
		var srcs string
		var created int64
		if err := rows.Scan(&note.ID, &note.ThreadID, &note.Turn, &note.Step, &note.Subtask, &note.Query, &note.Summary, &srcs, &created); err != nil {
			return nil, fmt.Errorf("sqlite: list research notes: %w", err)
		}
		if err := json.Unmarshal([]byte(srcs), &note.Sources); err != nil {
			return nil, fmt.Errorf("sqlite: research note %s: sources: %w", note.ID, err)
		}
		note.CreatedAt = time.Unix(0, created).UTC()
		out = append(out, note)
	}
	return out, rows.Err()
}

// noteArgs are a note's column values, its free text made storable (the
// summaries and queries come from the model and the web).
func noteArgs(n agent.Note) ([]any, error) {
	if n.ID == "" || n.ThreadID == "" {
		return nil, fmt.Errorf("sqlite: a note needs an id and a thread id")
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = time.Now()
	}
	n.Subtask, n.Query, n.Summary = dbtext.String(n.Subtask), dbtext.String(n.Query), dbtext.String(n.Summary)
	sources := dbtext.Strings(n.Sources)
	if sources == nil {
		sources = []string{} // stored as [], never null
	}
	srcs, err := json.Marshal(sources)
	if err != nil {
		return nil, err
	}
	return []any{n.ID, n.ThreadID, n.Turn, n.Step, n.Subtask, n.Query, n.Summary, string(srcs), n.CreatedAt.UnixNano()}, nil
}
