package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlstore"
)

// template is the file of a database with every migration applied, made
// once per test binary: Open copies it, so that a test's store costs a
// file copy and an open, not fifteen migrations.
var template struct {
	once sync.Once
	data []byte
	err  error
}

// Open opens a fresh SQLite store in a temporary directory of t (migrated
// like a new database) and closes it when t ends.
func Open(t testing.TB) *sqlite.Store {
	t.Helper()
	template.once.Do(func() { template.data, template.err = migrated() })
	if template.err != nil {
		t.Fatalf("sqlitetest: migrate a template database: %v", template.err)
	}
	path := filepath.Join(t.TempDir(), "deepresearch.db")
	if err := os.WriteFile(path, template.data, 0o600); err != nil {
		t.Fatalf("sqlitetest: %v", err)
	}
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path})
	if err != nil {
		t.Fatalf("sqlitetest: open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// migrated returns the bytes of a freshly migrated database file.
func migrated() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sqlitetest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path})
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil { // the last close folds the WAL into the file
		return nil, err
	}
	return os.ReadFile(path)
}

// Runs is the research.Store of a fresh store (Open).
func Runs(t testing.TB) *sqlstore.Runs { return sqlite.NewRuns(Open(t)) }

// Schedules is the schedule.Store of a fresh store (Open).
func Schedules(t testing.TB) *sqlstore.Schedules { return sqlite.NewSchedules(Open(t)) }

// Feedback is the research.FeedbackStore of a fresh store (Open).
func Feedback(t testing.TB) *sqlstore.Feedback { return sqlite.NewFeedback(Open(t)) }
