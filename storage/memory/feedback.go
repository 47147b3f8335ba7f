package memory

import (
	"context"
	"sort"
	"sync"

	"deepresearch/research"
	"deepresearch/storage/dbtext"
)

// Feedback is research.FeedbackStore in memory. The zero value is ready.
type Feedback struct {
	mu   sync.Mutex
	runs map[string]map[string]research.Feedback // run → user → record
}

// RecordFeedback implements research.FeedbackStore.
func (f *Feedback) RecordFeedback(_ context.Context, fb research.Feedback) error {
	fb, err := dbtext.Feedback(fb)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = map[string]map[string]research.Feedback{}
	}
	byUser := f.runs[fb.RunID]
	if byUser == nil {
		byUser = map[string]research.Feedback{}
		f.runs[fb.RunID] = byUser
	}
	if old, ok := byUser[fb.User]; ok && fb.Text == "" && fb.Value == research.FeedbackBad {
		fb.Text = old.Text
	}
	byUser[fb.User] = fb
	return nil
}

// Feedback implements research.FeedbackStore.
func (f *Feedback) Feedback(_ context.Context, runID string) ([]research.Feedback, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []research.Feedback
	for _, fb := range f.runs[runID] {
		out = append(out, fb)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].User < out[j].User
	})
	return out, nil
}

// CountFeedback implements research.FeedbackStore.
func (f *Feedback) CountFeedback(_ context.Context, runIDs []string) (map[string]research.FeedbackCount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]research.FeedbackCount{}
	for _, id := range runIDs {
		for _, fb := range f.runs[id] {
			out[id] = research.AddFeedbackCount(out[id], fb.Value, 1)
		}
	}
	return out, nil
}
