package postgres_test

import (
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/research"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	storetest.Feedback(t, func(t *testing.T) research.FeedbackStore {
		return postgres.NewFeedback(open(t, pgtest.Schema(t), savertest.Options{}))
	})
}

func TestReportsConformance(t *testing.T) {
	storetest.Reports(t, func(t *testing.T) (research.ReportStore, graph.Saver) {
		s := open(t, pgtest.Schema(t), savertest.Options{})
		return postgres.NewReports(s), s
	})
}
