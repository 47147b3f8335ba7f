package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// A database at 0016 migrates to 0017: a run's thread, status message and
// stream flag become its place (a digest's status message alone a place
// without a thread; a run with neither gets none), the interrupt's message
// id and the upload's keep their values under their new names, and the
// moved columns and detail keys are gone.
func TestMigrateSlackPlaces(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC).UnixNano()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	old := openAtVersion(t, path, 16)
	for _, r := range []struct {
		id, team, channel, threadTS, statusTS, intrID, detail, jobState string
	}{
		{"r-stream", "T1", "C1", "1.0", "4.0", "i1",
			`{"Question":"q","StatusStream":true,"Interrupt":{"Kind":"plan","Text":"p","MessageTS":"5.0"}}`, "parked"},
		{"r-message", "T1", "C2", "2.0", "4.1", "", `{"Question":"m","StatusStream":false}`, "done"},
		{"digest:s1@1", "", "", "", "7.0", "", `{"Question":"d"}`, "ready"},
		{"ask:a1", "", "", "", "", "", `{"Question":"a"}`, "done"},
	} {
		var intr any
		if r.intrID != "" {
			intr = r.intrID
		}
		if _, err := old.Exec(`INSERT INTO bot_runs (id, thread_id, team, channel, thread_ts, requester, status_ts, intr_id,
				dec_interrupt_id, cancel_requested_by, created_at, updated_at, detail)
			VALUES (?, ?, ?, ?, ?, 'U1', ?, ?, NULL, '', ?, ?, ?)`,
			r.id, "th-"+r.id, r.team, r.channel, r.threadTS, r.statusTS, intr, t0, t0, r.detail); err != nil {
			t.Fatalf("run %s: %v", r.id, err)
		}
		if _, err := old.Exec(`INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
			VALUES ('run', ?, ?, x'', '', 0, 1, ?, ?, 0, '')`, r.id, r.jobState, t0, t0); err != nil {
			t.Fatalf("job %s: %v", r.id, err)
		}
	}
	if _, err := old.Exec(`INSERT INTO bot_uploads (run_id, file_id, message_ts, at) VALUES ('r-message', 'F1', '6.0', ?)`, t0); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatalf("Open (migrate): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	runs, slack := NewRuns(s), NewSlack(s)
	for _, want := range []slackstate.Place{
		{RunID: "r-stream", Key: slackstate.ThreadKey{Team: "T1", Channel: "C1", ThreadTS: "1.0"}, Stream: true, StatusTS: "4.0"},
		{RunID: "r-message", Key: slackstate.ThreadKey{Team: "T1", Channel: "C2", ThreadTS: "2.0"}, StatusTS: "4.1"},
		{RunID: "digest:s1@1", StatusTS: "7.0"},
	} {
		if got, err := slack.Place(ctx, want.RunID); err != nil || got != want {
			t.Errorf("place of %s = %+v, %v; want %+v", want.RunID, got, err, want)
		}
	}
	if _, err := slack.Place(ctx, "ask:a1"); !errors.Is(err, slackstate.ErrNotFound) {
		t.Errorf("place of a run with no thread or status message: %v", err)
	}
	r, err := runs.Run(ctx, "r-stream")
	if err != nil {
		t.Fatal(err)
	}
	if want := (research.PendingInterrupt{ID: "i1", Kind: research.InterruptPlan, Text: "p", MessageID: "5.0"}); r.Interrupt == nil || *r.Interrupt != want ||
		r.Question != "q" || r.State != research.StateWaiting {
		t.Errorf("migrated run = %+v, interrupt %+v", r, r.Interrupt)
	}
	if u, err := runs.Upload(ctx, "r-message"); err != nil || u.FileID != "F1" || u.MessageID != "6.0" {
		t.Errorf("migrated upload = %+v, %v", u, err)
	}
	var left int
	if err := s.r.QueryRow(`SELECT count(*) FROM bot_runs WHERE json_type(detail, '$.StatusStream') IS NOT NULL
		OR json_type(detail, '$.Interrupt.MessageTS') IS NOT NULL`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d details keep a moved key (%v)", left, err)
	}
	if err := s.r.QueryRow(`SELECT count(*) FROM pragma_table_info('bot_runs')
		WHERE name IN ('team', 'channel', 'thread_ts', 'status_ts')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("bot_runs keeps %d moved columns (%v)", left, err)
	}
}
