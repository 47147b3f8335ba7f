package agent_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/storage"
	"deepresearch/storage/sqlitetest"
	"deepresearch/tools/search"
)

// privateDecision is a message of a private channel that only the asker
// may read (a DM run may search it).
func privateDecision() search.Result {
	text := "Private: we decided the Larkspur acquisition budget is 40 million, to be announced after the board meeting in May."
	return search.Result{Title: "Message in #exec", URL: "https://acme.slack.com/archives/G0EXEC/p1700000000000200", Snippet: text[:60], Content: text, Source: "slack"}
}

// TestWorkspaceRunLeavesNoCredentialOrNotes: a DM run that searches the
// asker's workspace, on a real SQLite database, stores neither the asker's
// action_token (in any row: checkpoints, writes, notes) nor a research note
// made of the private message it read.
func TestWorkspaceRunLeavesNoCredentialOrNotes(t *testing.T) {
	e := newEnv(t)
	db, err := storage.Open(context.Background(), storage.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const token = "tok-alice-0123456789abcdef"
	ws := &workspaceFake{visible: map[string][]search.Result{token: {privateDecision()}}}
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: db.Saver(), Notes: db.Notes(),
		Logger: slog.New(slog.DiscardHandler), Workspace: ws}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := a.Start(ctx, "t-dm", agent.Request{Question: "What did we decide about the Larkspur acquisition budget?",
		Workspace: &agent.Workspace{Token: token, Private: true}}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s, want done", res.Status)
	}
	if ws.searches() == 0 {
		t.Fatal("the workspace was never searched: the test needs it to be")
	}
	if !strings.Contains(res.Report, privateDecision().URL) {
		t.Fatalf("the report does not use the private message (the test needs it to):\n%s", res.Report)
	}
	if hits := sqlitetest.Find(t, db.Location(), token); len(hits) > 0 {
		t.Errorf("the database holds the asker's action_token: %v", hits)
	}
	notes, err := db.Notes().List(ctx, "t-dm")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		for _, s := range n.Sources {
			if s == privateDecision().URL {
				t.Errorf("a research note keeps the private message: %+v", n)
			}
		}
		if strings.Contains(n.Summary, "Larkspur") {
			t.Errorf("a research note summarises the private message: %q", n.Summary)
		}
	}
}

// TestForgetWorkspace: once the run has ended, a thread whose turn could
// search the workspace is forgotten — no row of the SQLite database holds
// the private message — and the thread can be asked again; a thread that
// never had workspace access is kept.
func TestForgetWorkspace(t *testing.T) {
	e := newEnv(t)
	db, err := storage.Open(context.Background(), storage.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ws := &workspaceFake{visible: map[string][]search.Result{"tok": {privateDecision()}}}
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: db.Saver(), Notes: db.Notes(),
		Logger: slog.New(slog.DiscardHandler), Workspace: ws}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := "What did we decide about the Larkspur acquisition budget?"
	for _, th := range []struct {
		id     string
		access *agent.Workspace
	}{{"t-dm", &agent.Workspace{Token: "tok", Private: true}}, {"t-web", nil}} {
		if res, err := a.Start(ctx, th.id, agent.Request{Question: q, Workspace: th.access}, e.record); err != nil || res.Status != agent.StatusDone {
			t.Fatalf("%s: %v %v", th.id, res, err)
		}
	}
	if hits := sqlitetest.Find(t, db.Location(), "Larkspur acquisition budget is 40"); len(hits) == 0 {
		t.Fatal("the private message is not in the checkpoints before forgetting: the test needs it there")
	}
	for _, tc := range []struct {
		id     string
		forget bool
	}{{"t-dm", true}, {"t-web", false}} {
		got, err := a.ForgetWorkspace(ctx, tc.id)
		if err != nil || got != tc.forget {
			t.Errorf("ForgetWorkspace(%s) = %v, %v; want %v", tc.id, got, err, tc.forget)
		}
	}
	if hits := sqlitetest.Find(t, db.Location(), "Larkspur acquisition budget is 40"); len(hits) > 0 {
		t.Errorf("after the run, the database holds the private message: %v", hits)
	}
	if _, err := a.Get(ctx, "t-web"); err != nil {
		t.Errorf("the thread without workspace access was lost: %v", err)
	}
	if res, err := a.Start(ctx, "t-dm", agent.Request{Question: "And what about the timeline?"}, e.record); err != nil || res.Status != agent.StatusDone {
		t.Errorf("a new question on the forgotten thread: %v %v", res, err)
	}
}
