package postgres

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/research"
	"deepresearch/schedule"
	"deepresearch/storage/migrate"
	"deepresearch/storage/pgtest"
)

// atVersion applies the migrations up to version to the schema of dsn and
// records them, as a release of that version left it, and returns a plain
// connection to it.
func atVersion(t *testing.T, dsn string, version int) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	all, err := migrate.Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE `+migrate.TableName+` (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range all[:version] {
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("migration %s: %v", m.Name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO `+migrate.TableName+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// A database at 0007 with live work in the old lease tables migrates
// forward without losing it: the work is taken over on the jobs table.
func TestMigrateLeasesOntoJobs(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	ns := func(sec int) int64 { return t0.Add(time.Duration(sec) * time.Second).UnixNano() }
	dsn := pgtest.Schema(t)
	old := atVersion(t, dsn, 7)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// The inbox: one entry whose receiver died (lease ended at 10), one
		// handled, one held for nobody.
		{`INSERT INTO bot_inbox (key, type, envelope_id, payload, received_at, owner, lease_until, attempts, done_at)
			VALUES ('ev:live', 'events_api', 'env-1', convert_to('{"event_id":"ev:live"}', 'UTF8'), $1, 'dead', $2, 1, 0)`, []any{ns(0), ns(10)}},
		{`INSERT INTO bot_inbox (key, type, envelope_id, payload, received_at, owner, lease_until, attempts, done_at)
			VALUES ('ev:done', 'interactive', 'env-2', ''::bytea, $1, '', 0, 2, $2)`, []any{ns(1), ns(2)}},
		{`INSERT INTO bot_inbox (key, type, envelope_id, payload, received_at, owner, lease_until, attempts, done_at)
			VALUES ('env:orphan', 'slash_commands', 'env-3', convert_to('{}', 'UTF8'), $1, '', 0, 1, 0)`, []any{ns(3)}},
		{`INSERT INTO bot_events (key, claimed_at) VALUES ('msg:C1:1.0', $1)`, []any{ns(4)}},
		{`INSERT INTO bot_instances (id, seen_at) VALUES ('A', $1)`, []any{ns(50)}},
		// Digest firings: one whose process died (lease ended at 10), one
		// waiting for approval, one done with its digest, one skipped.
		{`INSERT INTO schedules (id, active_since, created_at, updated_at, enabled, team, channel, owner, topic, spec, tz, options)
			VALUES ('s1', 0, 0, 0, true, 'T1', 'C1', 'U1', 'topic', '@daily', 'UTC', '{}')`, nil},
		{`INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES ('s1', $1, $2, $3, 0, 1, false, 'running', 'dead', '', NULL)`, []any{ns(100), ns(10), ns(5)}},
		{`INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES ('s1', $1, 0, $2, 0, 0, false, 'waiting', 'p0', '', NULL)`, []any{ns(200), ns(6)}},
		{`INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES ('s1', $1, 0, $2, $3, 1, true, 'done', 'p0', '', '{"title":"w1"}')`, []any{ns(50), ns(7), ns(8)}},
		{`INSERT INTO schedule_firings (schedule_id, due, lease_until, claimed_at, finished_at, attempts, manual, state, owner, error, digest)
			VALUES ('s1', $1, 0, $2, $3, 0, false, 'skipped', 'p0', 'missed', NULL)`, []any{ns(40), ns(9), ns(9)}},
	} {
		if _, err := old.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}

	s, err := Open(ctx, Options{URL: dsn})
	if err != nil {
		t.Fatalf("Open (migrate): %v", err)
	}
	t.Cleanup(s.Close)
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
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'schedule_firings'
		AND column_name IN ('lease_until', 'owner', 'state', 'attempts', 'finished_at')`).Scan(&leaseCols); err != nil || leaseCols != 0 {
		t.Errorf("schedule_firings keeps %d lease columns (%v)", leaseCols, err)
	}
	for _, table := range []string{"bot_inbox", "bot_events", "bot_instances"} {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s still there (%d, %v)", table, n, err)
		}
	}
}
