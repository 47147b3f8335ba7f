package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"deepresearch/agent"
	"deepresearch/storage/dbtext"
)

// Notes keeps the agent's research notes (step, query, summary, sources)
// in the research_notes table: agent.NoteStore, plus a listing for audits.
type Notes struct{ db *DB }

// NewNotes returns the notes store on db.
func NewNotes(db *DB) *Notes { return &Notes{db: db} }

// SaveNote stores n once per ID (saving the same note again changes nothing).
func (n *Notes) SaveNote(ctx context.Context, note agent.Note) error {
	args, err := n.noteArgs(note)
	if err != nil {
		return err
	}
	return n.db.Write(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO research_notes
			(id, thread_id, turn, step, subtask, query, summary, sources, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`, args...); err != nil {
			return n.db.errorf("save research note: %w", err)
		}
		return nil
	})
}

// List returns a thread's notes in research order.
func (n *Notes) List(ctx context.Context, threadID string) ([]agent.Note, error) {
	rows, err := n.db.Read().Query(ctx, `SELECT id, thread_id, turn, step, subtask, query, summary, sources, created_at
		FROM research_notes WHERE thread_id = $1 ORDER BY turn, step, created_at, id`, threadID)
	out, err := collect(rows, err, func(row Row) (agent.Note, error) {
		var note agent.Note
		var srcs []byte
		var created int64
		if err := row.Scan(&note.ID, &note.ThreadID, &note.Turn, &note.Step, &note.Subtask, &note.Query, &note.Summary, &srcs, &created); err != nil {
			return note, err
		}
		note.CreatedAt = time.Unix(0, created).UTC()
		if err := json.Unmarshal(srcs, &note.Sources); err != nil {
			return note, fmt.Errorf("research note %s: sources: %w", note.ID, err)
		}
		return note, nil
	})
	if err != nil {
		return nil, n.db.errorf("list research notes: %w", err)
	}
	return out, nil
}

// noteArgs are a note's column values, its free text made storable (the
// summaries and queries come from the model and the web).
func (n *Notes) noteArgs(note agent.Note) ([]any, error) {
	if note.ID == "" || note.ThreadID == "" {
		return nil, n.db.errorf("a note needs an id and a thread id")
	}
	if note.CreatedAt.IsZero() {
		note.CreatedAt = time.Now()
	}
	note.Subtask, note.Query, note.Summary = dbtext.String(note.Subtask), dbtext.String(note.Query), dbtext.String(note.Summary)
	sources := dbtext.Strings(note.Sources)
	if sources == nil {
		sources = []string{} // stored as [], never null
	}
	srcs, err := json.Marshal(sources)
	if err != nil {
		return nil, err
	}
	return []any{note.ID, note.ThreadID, note.Turn, note.Step, note.Subtask, note.Query, note.Summary, string(srcs), note.CreatedAt.UnixNano()}, nil
}
