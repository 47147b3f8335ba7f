package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/storage/migrate"
)

// openAtVersion creates the database at path with the migrations up to
// version applied and recorded, as a release of that version left it, and
// returns a plain connection to it.
func openAtVersion(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	all, err := migrate.Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE ` + migrate.TableName + ` (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, m := range all[:version] {
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("migration %s: %v", m.Name, err)
		}
		if _, err := db.Exec(`INSERT INTO `+migrate.TableName+` VALUES (?, ?, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// A database at 0007 with live work in the old lease tables migrates
// forward without losing it: the work is taken over on the jobs table.
func TestMigrateLeasesOntoJobs(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	ns := func(sec int) int64 { return t0.Add(time.Duration(sec) * time.Second).UnixNano() }
	path := filepath.Join(t.TempDir(), "db.sqlite")
	old := openAtVersion(t, path, 7)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// The inbox: one entry whose receiver died (lease ended at 10), one
		// handled, one held for nobody.
		{`INSERT INTO bot_inbox VALUES ('ev:live', 'events_api', 'env-1', CAST('{"event_id":"ev:live"}' AS BLOB), ?, 'dead', ?, 1, 0)`, []any{ns(0), ns(10)}},
		{`INSERT INTO bot_inbox VALUES ('ev:done', 'interactive', 'env-2', x'', ?, '', 0, 2, ?)`, []any{ns(1), ns(2)}},
		{`INSERT INTO bot_inbox VALUES ('env:orphan', 'slash_commands', 'env-3', CAST('{}' AS BLOB), ?, '', 0, 1, 0)`, []any{ns(3)}},
		{`INSERT INTO bot_events VALUES ('msg:C1:1.0', ?)`, []any{ns(4)}},
		{`INSERT INTO bot_instances VALUES ('A', ?)`, []any{ns(50)}},
	} {
		if _, err := old.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatalf("Open (migrate): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	r := NewRuns(s)

	got, err := r.ClaimInbox(ctx, "B", t0.Add(time.Minute), 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "ev:live" || got[1].Key != "env:orphan" {
		t.Fatalf("claimed %+v, want ev:live and env:orphan", got)
	}
	if e := got[0]; e.Type != "events_api" || e.EnvelopeID != "env-1" || string(e.Payload) != `{"event_id":"ev:live"}` ||
		!e.ReceivedAt.Equal(t0) || e.Owner != "B" || e.Attempts != 2 || e.Done() {
		t.Errorf("taken over entry = %+v", e)
	}
	if e := got[1]; e.Type != "slash_commands" || string(e.Payload) != `{}` || e.Attempts != 2 {
		t.Errorf("taken over orphan = %+v", e)
	}
	done, err := r.InboxEntry(ctx, "ev:done")
	if err != nil {
		t.Fatal(err)
	}
	if !done.Done() || !done.DoneAt.Equal(t0.Add(2*time.Second)) || done.Type != "interactive" || done.EnvelopeID != "env-2" || done.Attempts != 2 {
		t.Errorf("done entry = %+v", done)
	}
	if ok, err := r.PutInbox(ctx, []research.InboxEntry{{Key: "ev:done", ReceivedAt: t0, Owner: "C", LeaseUntil: t0}}); err != nil || ok[0] {
		t.Errorf("redelivery of a handled envelope stored: %v, %v", ok, err)
	}
	if first, err := r.ClaimEvent(ctx, "msg:C1:1.0", t0); err != nil || first {
		t.Errorf("ClaimEvent of a migrated key = %v, %v", first, err)
	}
	if n, err := r.LiveInstances(ctx, t0.Add(50*time.Second)); err != nil || n != 1 {
		t.Errorf("live instances = %d, %v", n, err)
	}
	for _, table := range []string{"bot_inbox", "bot_events", "bot_instances"} {
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s still there (%d, %v)", table, n, err)
		}
	}
}
