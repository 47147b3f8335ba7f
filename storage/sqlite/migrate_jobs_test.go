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
	"deepresearch/slackstate"
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
	// Runs: one whose process died (lease ended at 10), one queued, one
	// waiting for a decision, and finished ones (done, failed, cancelled).
	for _, r := range []struct {
		id, state, owner       string
		lease, attempt         int64
		intr                   any
		cancelBy, errText      string
		created, finished, upd int
	}{
		{"r-dead", "running", "dead", ns(10), 1, nil, "", "", 1, 0, 2},
		{"r-queued", "queued", "", 0, 0, nil, "", "", 2, 0, 2},
		{"r-wait", "waiting", "", 0, 1, "i1", "", "", 3, 0, 4},
		{"r-done", "done", "", 0, 1, nil, "", "", 4, 8, 8},
		{"r-failed", "failed", "", 0, 2, nil, "", "boom", 5, 9, 9},
		{"r-cancel", "cancelled", "", 0, 0, nil, "U1", "", 6, 7, 7},
	} {
		var finished int64 // 0: not finished
		if r.finished > 0 {
			finished = ns(r.finished)
		}
		if _, err := old.Exec(`INSERT INTO bot_runs (id, thread_id, team, channel, thread_ts, requester, question, follow_up, options,
				state, owner, lease_until, attempt, status_ts, intr_id, intr_kind, intr_text, intr_message_ts,
				dec_interrupt_id, dec_action, dec_text, dec_by, dec_at, cancel_requested_by, error, created_at, updated_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '', '', '', 0, ?, ?, ?, ?, ?)`,
			r.id, "th-"+r.id, "T1", "C1", "1."+r.id, "U1", "q "+r.id, false, "{}",
			r.state, r.owner, r.lease, r.attempt, "", r.intr, "draft", "text", "5.0",
			r.cancelBy, r.errText, ns(r.created), ns(r.upd), finished); err != nil {
			t.Fatalf("run %s: %v", r.id, err)
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

	inboxTakenOver(t, NewSlack(s), t0)
	firingsTakenOver(t, NewSchedules(s), t0)
	runsTakenOver(t, r, t0)
	var leaseCols int
	for _, table := range []string{"schedule_firings", "bot_runs"} {
		// schedule_firings has a state again (0016): the final one of a
		// firing that never ran.
		if err := s.r.QueryRow(`SELECT count(*) FROM pragma_table_info(?)
			WHERE name IN ('lease_until', 'owner', 'attempts', 'attempt', 'finished_at') OR (name = 'state' AND ? = 'bot_runs')`, table, table).Scan(&leaseCols); err != nil || leaseCols != 0 {
			t.Errorf("%s keeps %d lease columns (%v)", table, leaseCols, err)
		}
	}
	for _, table := range []string{"bot_inbox", "bot_events", "bot_instances"} {
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s still there (%d, %v)", table, n, err)
		}
	}
}

// inboxTakenOver: the migrated inbox entries are taken over, the handled
// one stays handled, and the event keys and instances came along.
func inboxTakenOver(t *testing.T, r slackstate.Store, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
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
	if ok, err := r.PutInbox(ctx, []slackstate.InboxEntry{{Key: "ev:done", ReceivedAt: t0, Owner: "C", LeaseUntil: t0}}); err != nil || ok[0] {
		t.Errorf("redelivery of a handled envelope stored: %v, %v", ok, err)
	}
	if first, err := r.ClaimEvent(ctx, "msg:C1:1.0", t0); err != nil || first {
		t.Errorf("ClaimEvent of a migrated key = %v, %v", first, err)
	}
	if n, err := r.LiveInstances(ctx, t0.Add(50*time.Second)); err != nil || n != 1 {
		t.Errorf("live instances = %d, %v", n, err)
	}
}

// firingsTakenOver: migration 0016 makes a firing a run; the firings
// still running or waiting on the old lease queue have no run to continue
// them, and are failed with why; the others keep their final state.
func firingsTakenOver(t *testing.T, sch schedule.Store, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for _, want := range []struct {
		due   int
		state schedule.FiringState
		err   string
	}{
		{100, schedule.FiringFailed, "abandoned: the process running it stopped"},
		{200, schedule.FiringFailed, "abandoned: never approved"},
		{50, schedule.FiringDone, ""},
		{40, schedule.FiringSkipped, "missed"},
	} {
		f, err := sch.GetFiring(ctx, "s1", at(want.due))
		if err != nil || f.State != want.state || f.Error != want.err {
			t.Errorf("firing due at %d = %+v, %v; want %s (%q)", want.due, f, err, want.state, want.err)
		}
	}
	firingsReadBack(t, sch, at)
}

// runsTakenOver: the migrated runs are taken over, decided and read back
// as they were, and CreateRun counts them.
func runsTakenOver(t *testing.T, r research.Store, t0 time.Time) {
	t.Helper()
	ctx := context.Background()
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	got2, err := r.AcquireRuns(ctx, "", "B", at(60), 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got2) != 2 || got2[0].ID != "r-dead" || got2[1].ID != "r-queued" {
		t.Fatalf("acquired %+v, want r-dead and r-queued", got2)
	}
	if a := got2[0]; a.State != research.StateRunning || a.Owner != "B" || a.Attempt != 2 || a.Question != "q r-dead" || !a.CreatedAt.Equal(at(1)) {
		t.Errorf("taken over run = %+v", a)
	}
	if _, err := r.Heartbeat(ctx, "r-dead", "dead", at(61), time.Minute); !errors.Is(err, research.ErrLeaseLost) {
		t.Errorf("the dead owner's heartbeat: %v", err)
	}
	decided, err := r.Decide(ctx, "r-wait", research.Decision{InterruptID: "i1", Action: research.ActionApprove, By: "U1", At: at(62)})
	if err != nil || decided.State != research.StateQueued || decided.Attempt != 0 || decided.Interrupt == nil || decided.Interrupt.Text != "text" {
		t.Errorf("decided run = %+v, %v", decided, err)
	}
	for _, want := range []struct {
		id    string
		state research.RunState
		err   string
		fin   int
	}{{"r-done", research.StateDone, "", 8}, {"r-failed", research.StateFailed, "boom", 9}, {"r-cancel", research.StateCancelled, "", 7}} {
		got, err := r.Run(ctx, want.id)
		if err != nil || got.State != want.state || got.Error != want.err || !got.FinishedAt.Equal(at(want.fin)) || got.Owner != "" {
			t.Errorf("run %s = %+v, %v", want.id, got, err)
		}
	}
	if err := r.CreateRun(ctx, research.Run{ID: "r-new", ThreadID: "th-r-dead", Requester: "U2", CreatedAt: at(63)}, 0); !errors.Is(err, research.ErrThreadBusy) {
		t.Errorf("a run on the busy thread of a migrated run: %v", err)
	}
	if err := r.CreateRun(ctx, research.Run{ID: "r-new", ThreadID: "th-r-done", Requester: "U1", CreatedAt: at(63)}, 3); !errors.Is(err, research.ErrUserLimit) {
		t.Errorf("U1 has 3 active migrated runs, limit 3: %v", err)
	}
}

// firingsReadBack: the migrated firings read back as they were, and one
// cannot be recorded again.
func firingsReadBack(t *testing.T, sch schedule.Store, at func(int) time.Time) {
	t.Helper()
	ctx := context.Background()
	prev, err := sch.PreviousDigest(ctx, "s1", at(100))
	if err != nil || prev.Digest == nil || prev.Digest.Title != "w1" || !prev.Manual || !prev.ClaimedAt.Equal(at(7)) {
		t.Errorf("previous digest = %+v, %v", prev, err)
	}
	if fs, err := sch.ListFirings(ctx, "s1", 0); err != nil || len(fs) != 4 {
		t.Errorf("firings = %+v, %v", fs, err)
	}
	if ok, err := sch.RecordFiring(ctx, schedule.Firing{ScheduleID: "s1", Due: at(100), State: schedule.FiringRunning, ClaimedAt: at(63)}); err != nil || ok {
		t.Errorf("a migrated firing was recorded again: %v, %v", ok, err)
	}
}
