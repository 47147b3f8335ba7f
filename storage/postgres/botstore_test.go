package postgres_test

import (
	"testing"

	"deepresearch/bot"
	"deepresearch/bot/storetest"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/graph/savertest"
)

var _ bot.Store = (*postgres.BotStore)(nil)

// Each test gets a fresh schema (search_path in the URL); without a server
// they skip, unless CI is set, when they fail.
func TestBotStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) bot.Store {
		return postgres.NewBotStore(open(t, pgtest.Schema(t), savertest.Options{}))
	})
}

// TestBotStoreTwoHandles races goroutines over two Stores (two connection
// pools) on one schema: the compare-and-set rules must hold across them.
func TestBotStoreTwoHandles(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := open(t, dsn, savertest.Options{}).BotStore()
	b := open(t, dsn, savertest.Options{}).BotStore()
	storetest.RunTwoHandles(t, a, b)
}
