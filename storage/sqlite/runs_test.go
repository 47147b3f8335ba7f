package sqlite_test

import (
	"path/filepath"
	"testing"

	"deepresearch/graph/savertest"
	"deepresearch/research"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/storetest"
)

var _ research.Store = (*sqlite.Runs)(nil)

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
