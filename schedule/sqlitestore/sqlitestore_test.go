package sqlitestore_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"deepresearch/schedule"
	"deepresearch/schedule/sqlitestore"
	"deepresearch/schedule/storetest"
	"deepresearch/storage/sqlite"
)

const sharedMigration = "../../storage/sqlite/migrations/0003_schedules.sql"

// openDB opens a fresh file the way storage/sqlite opens its writer (one
// connection, BEGIN IMMEDIATE) and creates the tables from Schema.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	db, err := sql.Open("sqlite", path+"?"+q.Encode()+"&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(context.Background(), sqlitestore.Schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) schedule.Store { return sqlitestore.New(openDB(t)) })
}

// TestSharedMigration: once storage/sqlite carries 0003_schedules.sql, it
// must be the same text as Schema.
func TestSharedMigration(t *testing.T) {
	b, err := os.ReadFile(sharedMigration)
	if os.IsNotExist(err) {
		t.Skip("storage/sqlite/migrations/0003_schedules.sql not added yet (waits for 0002)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != sqlitestore.Schema {
		t.Fatalf("%s differs from schedule/sqlitestore/schema.sql", sharedMigration)
	}
}

// TestConformanceOnStorageSQLite: the tables come from storage/sqlite's
// migrations, through its writer connection, as `serve` wires it.
func TestConformanceOnStorageSQLite(t *testing.T) {
	if _, err := os.Stat(sharedMigration); err != nil {
		t.Skip("storage/sqlite/migrations/0003_schedules.sql not added yet")
	}
	storetest.Run(t, func(t *testing.T) schedule.Store {
		st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "dr.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return sqlitestore.New(st.DB())
	})
}
