package postgres

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"deepresearch/research"
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
	for _, table := range []string{"bot_inbox", "bot_events", "bot_instances"} {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s still there (%d, %v)", table, n, err)
		}
	}
}
