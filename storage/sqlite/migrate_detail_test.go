package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"deepresearch/research"
	"deepresearch/slackstate"
)

// A database at 0012 with live runs (waiting on an interrupt, decided and
// queued, finished, cancelled by a decision, plain) migrates to 0013 and
// on: each reads back as it did, its thread and status message are its
// place (0017), and the waiting and decided ones still work.
func TestMigrateRunDetail(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	path := filepath.Join(t.TempDir(), "db.sqlite")
	old := openAtVersion(t, path, 12)

	key := slackstate.ThreadKey{Team: "T1", Channel: "C1", ThreadTS: "1.0"}
	statusTS := map[string]string{"r-wait": "4.0", "r-decided": "4.1"}
	opts := research.RunOptions{ApprovePlan: true, Depth: "deep", Language: "ja", Redeliver: "r-0"}
	plan := &research.PendingInterrupt{ID: "i1", Kind: research.InterruptPlan, Text: "1. 規制\n2. \"quotes\" & <b>", MessageID: "5.0"}
	decidedAt := at(3).Add(123456789 * time.Nanosecond)
	want := []research.Run{
		{ID: "r-wait", ThreadID: "th-wait", Requester: "U1", Question: "2026年の規制 <!here>", FollowUp: true, Options: opts,
			State: research.StateWaiting, Attempt: 1, Interrupt: plan, CreatedAt: at(1), UpdatedAt: at(2)},
		{ID: "r-decided", ThreadID: "th-decided", Requester: "U1", Question: "q", Options: research.RunOptions{ApproveDraft: true},
			State:     research.StateQueued,
			Interrupt: &research.PendingInterrupt{ID: "i2", Kind: research.InterruptDraft, Text: "draft", MessageID: "5.1"},
			Decision:  &research.Decision{InterruptID: "i2", Action: research.ActionRevise, Text: "shorter", By: "U2", At: decidedAt},
			CreatedAt: at(1), UpdatedAt: decidedAt},
		{ID: "r-done", ThreadID: "th-done", Requester: "U2", Question: "done q", State: research.StateDone, Attempt: 2,
			Interrupt: &research.PendingInterrupt{ID: "i3", Kind: research.InterruptQuestion, Text: "which?", MessageID: "5.2"},
			Decision:  &research.Decision{InterruptID: "i3", Action: research.ActionAnswer, Text: "2025", By: "U2", At: at(4)},
			CreatedAt: at(1), UpdatedAt: at(9), FinishedAt: at(9)},
		{ID: "r-cancel", ThreadID: "th-cancel", Requester: "U2", Question: "c", State: research.StateCancelled,
			Interrupt:         &research.PendingInterrupt{ID: "i4", Kind: research.InterruptPlan, Text: "p", MessageID: "5.3"},
			Decision:          &research.Decision{InterruptID: "i4", Action: research.ActionCancel, By: "U3", At: at(6)},
			CancelRequestedBy: "U3", CreatedAt: at(2), UpdatedAt: at(6), FinishedAt: at(6)},
		{ID: "r-plain", ThreadID: "th-plain", Requester: "U3", State: research.StateQueued, CreatedAt: at(3), UpdatedAt: at(3)},
	}
	for _, r := range want {
		run, job := oldRunRows(r, key, statusTS[r.ID])
		if _, err := old.Exec(`INSERT INTO bot_runs (id, thread_id, team, channel, thread_ts, requester, question, follow_up, options,
				status_ts, intr_id, intr_kind, intr_text, intr_message_ts, dec_interrupt_id, dec_action, dec_text, dec_by, dec_at,
				cancel_requested_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run...); err != nil {
			t.Fatalf("run %s: %v", r.ID, err)
		}
		if _, err := old.Exec(`INSERT INTO jobs (kind, key, state, payload, owner, lease_until, attempts, created_at, updated_at, finished_at, error)
			VALUES ('run', ?, ?, ?, '', 0, ?, ?, ?, ?, '')`,
			job...); err != nil {
			t.Fatalf("job %s: %v", r.ID, err)
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
	st := NewRuns(s)
	for _, w := range want {
		got, err := st.Run(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("run %s read back as\n%+v %+v %+v\nwant\n%+v %+v %+v", w.ID, got, got.Interrupt, got.Decision, w, w.Interrupt, w.Decision)
		}
		p, err := NewSlack(s).Place(ctx, w.ID)
		if want := (slackstate.Place{RunID: w.ID, Key: key, StatusTS: statusTS[w.ID]}); err != nil || p != want {
			t.Errorf("place of %s = %+v, %v; want %+v", w.ID, p, err, want)
		}
	}
	var moved int
	if err := s.r.QueryRow(`SELECT count(*) FROM pragma_table_info('bot_runs') WHERE name IN ('question', 'follow_up', 'options',
		'intr_kind', 'intr_text', 'intr_message_ts', 'dec_action', 'dec_text', 'dec_by', 'dec_at')`).Scan(&moved); err != nil || moved != 0 {
		t.Errorf("bot_runs keeps %d moved columns (%v)", moved, err)
	}

	migratedRunsWork(t, st, want, at)
}

// oldRunRows returns the values of run r's bot_runs row (in the thread
// key, with the status message statusTS) and of its job as release 0012
// stored them.
func oldRunRows(r research.Run, key slackstate.ThreadKey, statusTS string) (run, job []any) {
	ns := func(tm time.Time) int64 { return tm.UnixNano() }
	jobState := map[research.RunState]string{research.StateWaiting: "parked", research.StateQueued: "ready",
		research.StateDone: "done", research.StateCancelled: "failed"}
	var intrID, decID any
	var intr research.PendingInterrupt
	var dec research.Decision
	var decAt int64
	if r.Interrupt != nil {
		intr, intrID = *r.Interrupt, r.Interrupt.ID
	}
	if r.Decision != nil {
		dec, decID, decAt = *r.Decision, r.Decision.InterruptID, ns(r.Decision.At)
	}
	o := `{"ApprovePlan":false,"ApproveDraft":false,"Depth":"","Language":""}`
	if r.Options != (research.RunOptions{}) {
		o = `{"ApprovePlan":` + map[bool]string{true: "true", false: "false"}[r.Options.ApprovePlan] +
			`,"ApproveDraft":` + map[bool]string{true: "true", false: "false"}[r.Options.ApproveDraft] +
			`,"Depth":"` + r.Options.Depth + `","Language":"` + r.Options.Language + `"`
		if r.Options.Redeliver != "" {
			o += `,"Redeliver":"` + r.Options.Redeliver + `"`
		}
		o += `}`
	}
	payload, fin := []byte{}, int64(0)
	if r.State == research.StateCancelled {
		payload = []byte("cancelled")
	}
	if !r.FinishedAt.IsZero() {
		fin = ns(r.FinishedAt)
	}
	run = []any{r.ID, r.ThreadID, key.Team, key.Channel, key.ThreadTS, r.Requester, r.Question, r.FollowUp, o,
		statusTS, intrID, string(intr.Kind), intr.Text, intr.MessageID, decID, string(dec.Action), dec.Text, dec.By, decAt,
		r.CancelRequestedBy, ns(r.CreatedAt), ns(r.UpdatedAt)}
	job = []any{r.ID, jobState[r.State], payload, r.Attempt, ns(r.CreatedAt), ns(r.UpdatedAt), fin}
	return run, job
}

// migratedRunsWork: of the migrated runs want, the waiting one (want[0]) is
// decided and resumed, waits again and finishes; the decided one (want[1])
// is acquired and finishes.
func migratedRunsWork(t *testing.T, st research.Store, want []research.Run, at func(int) time.Time) {
	t.Helper()
	ctx := context.Background()
	d := research.Decision{InterruptID: "i1", Action: research.ActionApprove, By: "U1", At: at(20)}
	r, err := st.Decide(ctx, "r-wait", d)
	if err != nil || r.State != research.StateQueued || r.Question != want[0].Question || r.Options != want[0].Options || !r.FollowUp ||
		r.Interrupt == nil || *r.Interrupt != *want[0].Interrupt || r.Decision == nil || *r.Decision != d {
		t.Fatalf("decided %+v %+v, %v", r, r.Decision, err)
	}
	if _, err := st.Decide(ctx, "r-wait", d); err == nil {
		t.Error("a second decision on a migrated interrupt was taken")
	}
	for _, id := range []string{"r-wait", "r-decided"} {
		r, err := st.AcquireRun(ctx, id, "B", at(21), time.Minute)
		if err != nil || r.Owner != "B" || r.Decision == nil {
			t.Fatalf("acquire %s: %+v, %v", id, r, err)
		}
	}
	draft := research.PendingInterrupt{ID: "i5", Kind: research.InterruptDraft, Text: "d", MessageID: "6.0"}
	if err := st.WaitRun(ctx, "r-wait", "B", draft, at(22)); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Run(ctx, "r-wait"); err != nil || r.Interrupt == nil || *r.Interrupt != draft || r.Decision != nil || r.Question != want[0].Question {
		t.Errorf("waiting again: %+v, %v", r, err)
	}
	if err := st.FinishRun(ctx, "r-decided", "B", research.StateDone, "", at(23)); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Run(ctx, "r-decided"); err != nil || r.State != research.StateDone || r.Decision == nil || *r.Decision != *want[1].Decision {
		t.Errorf("finished: %+v, %v", r, err)
	}
}
