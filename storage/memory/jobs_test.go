package memory_test

import (
	"testing"

	"deepresearch/jobs"
	"deepresearch/storage/memory"
	"deepresearch/storage/storetest"
)

func TestJobsConformance(t *testing.T) {
	storetest.Jobs(t, func(testing.TB) jobs.Queue { return memory.NewJobs() })
}

func BenchmarkJobsClaimFinish(b *testing.B) {
	storetest.BenchJobs(b, func(testing.TB) jobs.Queue { return memory.NewJobs() })
}
