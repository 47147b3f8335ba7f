package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/schedule"
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
		// Digest firings: one whose process died (lease ended at 10), one
		// waiting for approval, one done with its digest, one skipped.
		{`INSERT INTO schedules VALUES ('s1', 0, 0, 0, 1, 'T1', 'C1', 'U1', 'topic', '@daily', 'UTC', '{}')`, nil},
		{`INSERT INTO schedule_firings VALUES ('s1', ?, ?, ?, 0, 1, 0, 'running', 'dead', '', NULL)`, []any{ns(100), ns(10), ns(5)}},
		{`INSERT INTO schedule_firings VALUES ('s1', ?, 0, ?, 0, 0, 0, 'waiting', 'p0', '', NULL)`, []any{ns(200), ns(6)}},
		{`INSERT INTO schedule_firings VALUES ('s1', ?, 0, ?, ?, 1, 1, 'done', 'p0', '', '{"title":"w1"}')`, []any{ns(50), ns(7), ns(8)}},
		{`INSERT INTO schedule_firings VALUES ('s1', ?, 0, ?, ?, 0, 0, 'skipped', 'p0', 'missed', NULL)`, []any{ns(40), ns(9), ns(9)}},
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

	sch := NewSchedules(s)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	taken, err := sch.TakeOverFiring(ctx, "B", at(60), at(90), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(taken) != 1 || !taken[0].Due.Equal(at(100)) || taken[0].Owner != "B" || taken[0].Attempts != 2 ||
		taken[0].State != schedule.FiringRunning || !taken[0].ClaimedAt.Equal(at(5)) || !taken[0].LeaseUntil.Equal(at(90)) {
		t.Fatalf("taken over firings = %+v", taken)
	}
	if err := sch.FinishFiring(ctx, "s1", at(100), "B", schedule.Outcome{State: schedule.FiringDone, Digest: &schedule.Digest{Title: "w2"}, FinishedAt: at(70)}); err != nil {
		t.Fatal(err)
	}
	approved, err := sch.ApproveFiring(ctx, "s1", at(200), "C", at(61), at(91))
	if err != nil {
		t.Fatal(err)
	}
	if approved.State != schedule.FiringRunning || approved.Owner != "C" || approved.Attempts != 1 {
		t.Errorf("approved firing = %+v", approved)
	}
	if _, err := sch.ApproveFiring(ctx, "s1", at(200), "D", at(62), at(92)); !errors.Is(err, schedule.ErrNotWaiting) {
		t.Errorf("second approval: %v", err)
	}
	prev, err := sch.PreviousDigest(ctx, "s1", at(100))
	if err != nil || prev.Digest == nil || prev.Digest.Title != "w1" || !prev.Manual || !prev.FinishedAt.Equal(at(8)) || prev.Attempts != 1 {
		t.Errorf("previous digest = %+v, %v", prev, err)
	}
	skipped, err := sch.GetFiring(ctx, "s1", at(40))
	if err != nil || skipped.State != schedule.FiringSkipped || skipped.Error != "missed" || !skipped.FinishedAt.Equal(at(9)) {
		t.Errorf("skipped firing = %+v, %v", skipped, err)
	}
	if fs, err := sch.ListFirings(ctx, "s1", 0); err != nil || len(fs) != 4 || fs[0].State != schedule.FiringRunning || fs[1].State != schedule.FiringDone {
		t.Errorf("firings = %+v, %v", fs, err)
	}
	if ok, err := sch.ClaimFiring(ctx, schedule.Firing{ScheduleID: "s1", Due: at(100), State: schedule.FiringRunning, Owner: "E", LeaseUntil: at(200), ClaimedAt: at(63)}); err != nil || ok {
		t.Errorf("a migrated firing was claimed again: %v, %v", ok, err)
	}
	var leaseCols int
	if err := s.r.QueryRow(`SELECT count(*) FROM pragma_table_info('schedule_firings')
		WHERE name IN ('lease_until', 'owner', 'state', 'attempts', 'finished_at')`).Scan(&leaseCols); err != nil || leaseCols != 0 {
		t.Errorf("schedule_firings keeps %d lease columns (%v)", leaseCols, err)
	}
	for _, table := range []string{"bot_inbox", "bot_events", "bot_instances"} {
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s still there (%d, %v)", table, n, err)
		}
	}
}
