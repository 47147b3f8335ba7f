package postgres_test

import (
	"context"
	"testing"

	"deepresearch/graph/savertest"
	"deepresearch/research"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/storetest"
)

// Each test gets a fresh schema (search_path in the URL); without a server
// they skip, unless CI is set, when they fail.
func TestRunsConformance(t *testing.T) {
	storetest.Runs(t, func(t *testing.T) research.Store {
		return postgres.NewRuns(open(t, pgtest.Schema(t), savertest.Options{}))
	})
}

// TestBotStoreTwoHandles races goroutines over two Stores (two connection
// pools) on one schema: the compare-and-set rules must hold across them.
func TestRunsTwoHandles(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := postgres.NewRuns(open(t, dsn, savertest.Options{}))
	b := postgres.NewRuns(open(t, dsn, savertest.Options{}))
	storetest.RunsTwoHandles(t, a, b)
}

func BenchmarkRunLife(b *testing.B) {
	storetest.BenchRuns(b, func(tb testing.TB) research.Store {
		s, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.Schema(tb)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Close)
		return postgres.NewRuns(s)
	})
}
