package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"deepresearch/schedule"
	"deepresearch/schedule/sqlitestore"
	"deepresearch/schedule/storetest"
	"deepresearch/storage/sqlite"
)

// openDB opens a fresh database file through storage/sqlite (its
// migrations create the tables) and returns its writer connection, as serve
// wires it.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.DB()
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store { return sqlitestore.New(openDB(t)) })
}
