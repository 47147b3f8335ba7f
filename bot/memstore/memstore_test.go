package memstore_test

import (
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/memstore"
	"deepresearch/bot/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) bot.Store { return memstore.New() })
}
