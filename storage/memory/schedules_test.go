package memory_test

import (
	"testing"

	"deepresearch/schedule"
	"deepresearch/storage/memory"
	"deepresearch/storage/storetest"
)

func TestSchedulesConformance(t *testing.T) {
	storetest.Schedules(t, func(t *testing.T) schedule.Store { return memory.NewSchedules() })
}
