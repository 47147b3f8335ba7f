package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/graph"
	"deepresearch/storage/postgres"
	"deepresearch/storage/storagetest"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func baseURL() string {
	if u := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultURL
}

// withSearchPath returns dsn with search_path set (a runtime parameter that
// pgx passes to the server for every connection).
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", dsn, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// freshSchema creates an empty schema for one test, dropped when it ends, and
// returns a connection string whose search_path points at it. Without a
// server it skips, unless CI=true.
func freshSchema(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, baseURL())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Postgres is required when CI=true: %v", err)
		}
		t.Skipf("Postgres unreachable (%v); set DEEPRESEARCH_TEST_DATABASE_URL or start it", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, baseURL())
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, baseURL(), schema)
}

func open(t *testing.T, dsn string, o storagetest.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxRecordBytes: o.MaxRecordBytes, Now: o.Now, MaxConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T, o storagetest.Options) graph.Saver {
			return open(t, freshSchema(t), o)
		},
		Pair: func(t *testing.T, o storagetest.Options) (graph.Saver, graph.Saver) {
			dsn := freshSchema(t)
			return open(t, dsn, o), open(t, dsn, o)
		},
	})
}

// TestProcesses: worker processes open one fresh schema at once (racing the
// migrations) and race commits and a resume on it.
func TestProcesses(t *testing.T) {
	if dsn := storagetest.WorkerTarget(); dsn != "" {
		s, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := storagetest.Worker(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return
	}
	dsn := freshSchema(t)
	r := storagetest.RunProcesses(t, "TestProcesses", dsn, 3)
	s := open(t, dsn, storagetest.Options{})
	storagetest.CheckProcesses(t, s, r)
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
