package memory_test

import (
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/storetest"
	"deepresearch/storage/memory"
)

func TestRunsConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) bot.Store { return memory.NewRuns() })
}
