package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"deepresearch/schedule"
	"deepresearch/schedule/pgstore"
	"deepresearch/schedule/storetest"
	"deepresearch/storage/postgres"
)

const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func baseURL() string {
	if u := os.Getenv("DEEPRESEARCH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultURL
}

// freshSchema creates a schema with the tables (storage/postgres's
// migrations, as serve gets them), dropped when the test ends, and returns a
// URL whose search_path points at it. Without a server it skips, unless
// CI=true.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := emptySchema(t)
	st, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	st.Close()
	return dsn
}

// emptySchema is freshSchema without the tables.
func emptySchema(t testing.TB) string {
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
	_, _ = rand.Read(b)
	schema := "s_" + hex.EncodeToString(b)
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
	u, err := url.Parse(baseURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store { return pgstore.New(openPool(t, freshSchema(t))) })
}

// TestConformanceOnStoragePostgres: the tables come from storage/postgres's
// migrations, through its pool, as `serve` wires it.
func TestConformanceOnStoragePostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store {
		st, err := postgres.Open(context.Background(), postgres.Options{URL: emptySchema(t), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return pgstore.New(st.Pool())
	})
}
