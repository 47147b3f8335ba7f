package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"deepresearch/graph/savertest"
	"deepresearch/research"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/storetest"
)

func TestRunsConformance(t *testing.T) {
	storetest.Runs(t, func(t *testing.T) research.Store {
		return sqlite.NewRuns(open(t, filepath.Join(t.TempDir(), "db.sqlite"), savertest.Options{}))
	})
}

// TestBotStoreTwoHandles races goroutines over two Stores (two connection
// pools) on one file: the compare-and-set rules must hold across them.
func TestRunsTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	a := sqlite.NewRuns(open(t, path, savertest.Options{}))
	b := sqlite.NewRuns(open(t, path, savertest.Options{}))
	storetest.RunsTwoHandles(t, a, b)
}

func BenchmarkRunLife(b *testing.B) {
	storetest.BenchRuns(b, func(tb testing.TB) research.Store {
		s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(tb.TempDir(), "db.sqlite")})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		return sqlite.NewRuns(s)
	})
}
