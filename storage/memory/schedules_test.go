package memory_test

import (
	"testing"

	"deepresearch/schedule"
	"deepresearch/schedule/storetest"
	"deepresearch/storage/memory"
)

func TestSchedulesConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store { return memory.NewSchedules() })
}
