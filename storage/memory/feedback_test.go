package memory_test

import (
	"testing"

	"deepresearch/research"
	"deepresearch/storage/memory"
	"deepresearch/storage/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	storetest.Feedback(t, func(*testing.T) research.FeedbackStore { return &memory.Feedback{} })
}
