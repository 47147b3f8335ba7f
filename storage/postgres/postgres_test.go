package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/graph/savertest"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
)

func open(t *testing.T, dsn string, o savertest.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxRecordBytes: o.MaxRecordBytes, Now: o.Now, MaxConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	savertest.Run(t, savertest.Harness{
		New: func(t *testing.T, o savertest.Options) graph.Saver {
			return open(t, pgtest.Schema(t), o)
		},
		Pair: func(t *testing.T, o savertest.Options) (graph.Saver, graph.Saver) {
			dsn := pgtest.Schema(t)
			return open(t, dsn, o), open(t, dsn, o)
		},
	})
}

// TestProcesses: worker processes open one fresh schema at once (racing the
// migrations) and race commits and a resume on it.
func TestProcesses(t *testing.T) {
	if dsn := savertest.WorkerTarget(); dsn != "" {
		s, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := savertest.Worker(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return
	}
	dsn := pgtest.Schema(t)
	r := savertest.RunProcesses(t, "TestProcesses", dsn, 3)
	s := open(t, dsn, savertest.Options{})
	savertest.CheckProcesses(t, s, r)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, v int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), max(version) FROM deepresearch_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != v || n < 1 {
		t.Errorf("migrations table has %d rows up to version %d", n, v)
	}
}
