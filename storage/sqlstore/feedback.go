package sqlstore

import (
	"context"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Feedback is research.FeedbackStore on the run_feedback table.
type Feedback struct{ db *DB }

// NewFeedback returns the feedback store on db.
func NewFeedback(db *DB) *Feedback { return &Feedback{db: db} }

// RecordFeedback implements research.FeedbackStore.
func (f *Feedback) RecordFeedback(ctx context.Context, fb research.Feedback) error {
	fb, err := dbtext.Feedback(fb)
	if err != nil {
		return f.db.errorf("feedback: %w", err)
	}
	return f.db.Write(ctx, func(q Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO run_feedback (run_id, user_id, value, text, at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (run_id, user_id) DO UPDATE SET value = excluded.value, at = excluded.at,
			text = CASE WHEN excluded.text = '' AND excluded.value = 'negative' THEN run_feedback.text ELSE excluded.text END`,
			fb.RunID, fb.User, string(fb.Value), fb.Text, nanos(fb.At))
		if err != nil {
			return f.db.errorf("record feedback: %w", err)
		}
		return nil
	})
}

// Feedback implements research.FeedbackStore.
func (f *Feedback) Feedback(ctx context.Context, runID string) ([]research.Feedback, error) {
	rows, err := f.db.Read().Query(ctx, `SELECT run_id, user_id, value, text, at FROM run_feedback
		WHERE run_id = $1 ORDER BY at, user_id`, runID)
	out, err := collect(rows, err, func(row Row) (research.Feedback, error) {
		var fb research.Feedback
		var value string
		var at int64
		err := row.Scan(&fb.RunID, &fb.User, &value, &fb.Text, &at)
		fb.Value, fb.At = research.FeedbackValue(value), fromNanos(at)
		return fb, err
	})
	if err != nil {
		return nil, f.db.errorf("feedback: %w", err)
	}
	return out, nil
}

// CountFeedback implements research.FeedbackStore.
func (f *Feedback) CountFeedback(ctx context.Context, runIDs []string) (map[string]research.FeedbackCount, error) {
	out := map[string]research.FeedbackCount{}
	if len(runIDs) == 0 {
		return out, nil
	}
	list, err := f.db.list(runIDs)
	if err != nil {
		return nil, f.db.errorf("count feedback: %w", err)
	}
	rows, err := f.db.Read().Query(ctx, `SELECT run_id, value, count(*) FROM run_feedback
		WHERE `+f.db.inList("run_id", "$1")+` GROUP BY run_id, value`, list)
	if err != nil {
		return nil, f.db.errorf("count feedback: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v string
		var n int
		if err := rows.Scan(&id, &v, &n); err != nil {
			return nil, f.db.errorf("count feedback: %w", err)
		}
		out[id] = research.AddFeedbackCount(out[id], research.FeedbackValue(v), n)
	}
	return out, rows.Err()
}
