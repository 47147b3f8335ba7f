package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"deepresearch/schedule"
	"deepresearch/schedule/pgstore"
	"deepresearch/schedule/storetest"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
)

// freshSchema creates a schema with the tables (storage/postgres's
// migrations, as serve gets them), dropped when the test ends, and returns a
// URL whose search_path points at it. Without a server it skips, unless CI is
// set.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := pgtest.Schema(t)
	st, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	st.Close()
	return dsn
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
		st, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.Schema(t), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return pgstore.New(st.Pool())
	})
}
