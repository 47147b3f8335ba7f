package postgres_test

import (
	"context"
	"testing"

	"deepresearch/schedule"
	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlstore"
	"deepresearch/storage/storetest"
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

func openSchedules(t testing.TB, dsn string) *sqlstore.Schedules {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Options{URL: dsn, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return postgres.NewSchedules(st)
}

func TestSchedulesConformance(t *testing.T) {
	storetest.Schedules(t, func(t *testing.T) schedule.Store { return openSchedules(t, freshSchema(t)) })
}

// TestConformanceOnStoragePostgres: the tables come from storage/postgres's
// migrations, through its pool, as `serve` wires it.
func TestSchedulesConformanceOnStoragePostgres(t *testing.T) {
	storetest.Schedules(t, func(t *testing.T) schedule.Store {
		st, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.Schema(t), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return postgres.NewSchedules(st)
	})
}
