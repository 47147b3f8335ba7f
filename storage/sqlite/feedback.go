package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Feedback is research.FeedbackStore on the run_feedback table.
type Feedback struct{ s *Store }

// NewFeedback returns the feedback store on s's database.
func NewFeedback(s *Store) *Feedback { return &Feedback{s: s} }

// RecordFeedback implements research.FeedbackStore.
func (f *Feedback) RecordFeedback(ctx context.Context, fb research.Feedback) error {
	fb, err := dbtext.Feedback(fb)
	if err != nil {
		return fmt.Errorf("sqlite: feedback: %w", err)
	}
	return f.s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO run_feedback (run_id, user_id, value, text, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run_id, user_id) DO UPDATE SET value = excluded.value, at = excluded.at,
			text = CASE WHEN excluded.text = '' AND excluded.value = 'negative' THEN run_feedback.text ELSE excluded.text END`,
			fb.RunID, fb.User, string(fb.Value), fb.Text, nanos(fb.At))
		if err != nil {
			return fmt.Errorf("sqlite: record feedback: %w", err)
		}
		return nil
	})
}

// Feedback implements research.FeedbackStore.
func (f *Feedback) Feedback(ctx context.Context, runID string) ([]research.Feedback, error) {
	rows, err := f.s.r.QueryContext(ctx, `SELECT run_id, user_id, value, text, at FROM run_feedback
		WHERE run_id = ? ORDER BY at, user_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: feedback: %w", err)
	}
	defer rows.Close()
	var out []research.Feedback
	for rows.Next() {
		var fb research.Feedback
		var at int64
		if err := rows.Scan(&fb.RunID, &fb.User, &fb.Value, &fb.Text, &at); err != nil {
			return nil, fmt.Errorf("sqlite: feedback: %w", err)
		}
		fb.At = fromNanos(at)
		out = append(out, fb)
	}
	return out, rows.Err()
}

// CountFeedback implements research.FeedbackStore.
func (f *Feedback) CountFeedback(ctx context.Context, runIDs []string) (map[string]research.FeedbackCount, error) {
	out := map[string]research.FeedbackCount{}
	if len(runIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	rows, err := f.s.r.QueryContext(ctx, `SELECT run_id, value, count(*) FROM run_feedback
		WHERE run_id IN (?`+strings.Repeat(", ?", len(runIDs)-1)+`) GROUP BY run_id, value`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count feedback: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v string
		var n int
		if err := rows.Scan(&id, &v, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count feedback: %w", err)
		}
		out[id] = research.AddFeedbackCount(out[id], research.FeedbackValue(v), n)
	}
	return out, rows.Err()
}
