package sqlite_test

import (
	"path/filepath"
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/storetest"
	"deepresearch/storage/sqlite"
	"deepresearch/graph/savertest"
)

var _ bot.Store = (*sqlite.BotStore)(nil)

func TestBotStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) bot.Store {
		return sqlite.NewBotStore(open(t, filepath.Join(t.TempDir(), "db.sqlite"), savertest.Options{}))
	})
}

// TestBotStoreTwoHandles races goroutines over two Stores (two connection
// pools) on one file: the compare-and-set rules must hold across them.
func TestBotStoreTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	a := open(t, path, savertest.Options{}).BotStore()
	b := open(t, path, savertest.Options{}).BotStore()
	storetest.RunTwoHandles(t, a, b)
}
