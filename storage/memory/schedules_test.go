package memory_test

import (
	"testing"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/memory"
	"deepresearch/storage/storetest"
)

func TestSchedulesConformance(t *testing.T) {
	storetest.Schedules(t, func(*testing.T) (schedule.Store, research.Store) {
		r := memory.NewRuns()
		return memory.NewSchedulesOn(r), r
	})
}
