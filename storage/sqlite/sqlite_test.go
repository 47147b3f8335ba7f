package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/storage/sqlite"
)

func open(t *testing.T, path string, o savertest.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, MaxRecordBytes: o.MaxRecordBytes, Now: o.Now})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	savertest.Run(t, savertest.Harness{
		New: func(t *testing.T, o savertest.Options) graph.Saver {
			return open(t, filepath.Join(t.TempDir(), "data", "db.sqlite"), o)
		},
		Pair: func(t *testing.T, o savertest.Options) (graph.Saver, graph.Saver) {
			path := filepath.Join(t.TempDir(), "db.sqlite")
			return open(t, path, o), open(t, path, o)
		},
	})
}

// TestProcesses: worker processes open one fresh file at once (racing the
// migrations) and race commits and a resume on it.
func TestProcesses(t *testing.T) {
	if path := savertest.WorkerTarget(); path != "" {
		s, err := sqlite.Open(context.Background(), sqlite.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := savertest.Worker(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "db.sqlite")
	r := savertest.RunProcesses(t, "TestProcesses", path, 3)
	s := open(t, path, savertest.Options{})
	savertest.CheckProcesses(t, s, r)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, v int
	if err := db.QueryRow(`SELECT count(*), max(version) FROM deepresearch_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != v || n < 1 {
		t.Errorf("migrations table has %d rows up to version %d", n, v)
	}
}
