package sqlite_test

import (
	"path/filepath"
	"testing"

	"deepresearch/graph/savertest"
	"deepresearch/research"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	storetest.Feedback(t, func(t *testing.T) research.FeedbackStore {
		return sqlite.NewFeedback(open(t, filepath.Join(t.TempDir(), "f.db"), savertest.Options{}))
	})
}
