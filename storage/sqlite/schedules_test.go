package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"deepresearch/schedule"
	"deepresearch/storage/sqlite"
	"deepresearch/storage/sqlstore"
	"deepresearch/storage/storetest"
)

// openSchedules opens a fresh database file (its migrations create the
// tables) and returns its schedule store.
func openSchedules(t *testing.T) *sqlstore.Schedules {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return sqlite.NewSchedules(st)
}

func TestSchedulesConformance(t *testing.T) {
	storetest.Schedules(t, func(t *testing.T) schedule.Store { return openSchedules(t) })
}
