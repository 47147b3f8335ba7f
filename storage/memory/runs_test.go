package memory_test

import (
	"testing"

	"deepresearch/research"
	"deepresearch/storage/memory"
	"deepresearch/storage/storetest"
)

func TestRunsConformance(t *testing.T) {
	storetest.Runs(t, func(*testing.T) research.Store { return memory.NewRuns() })
}

func BenchmarkRunLife(b *testing.B) {
	storetest.BenchRuns(b, func(testing.TB) research.Store { return memory.NewRuns() })
}
