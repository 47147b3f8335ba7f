package sqlite_test

import (
	"path/filepath"
	"testing"

	"deepresearch/graph"
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

func TestReportsConformance(t *testing.T) {
	storetest.Reports(t, func(t *testing.T) (research.ReportStore, graph.Saver) {
		s := open(t, filepath.Join(t.TempDir(), "r.db"), savertest.Options{})
		return sqlite.NewReports(s), s
	})
}
