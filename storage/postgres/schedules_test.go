package postgres_test

import (
	"context"
	"testing"

	"deepresearch/storage/pgtest"
	"deepresearch/storage/postgres"
	"deepresearch/storage/sqlstore"
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
