package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/citation"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/tools/search"
)

// workspaceFake is a workspace whose messages each token's user may see.
type workspaceFake struct {
	visible map[string][]search.Result // by token
	fail    error

	mu      sync.Mutex
	queries []string
	private []bool
}

func (f *workspaceFake) SearchWorkspace(_ context.Context, w agent.Workspace, q search.Query) ([]search.Result, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q.Text)
	f.private = append(f.private, w.Private)
	f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	return f.visible[w.Token], nil
}

func (f *workspaceFake) searches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

const decisionLink = "https://acme.slack.com/archives/C0PUBLIC/p1700000000000100"

func decisionMessage() search.Result {
	text := "We decided to ship the Go rewrite of the billing service in March, after the load test passed. Rollback stays possible until April."
	return search.Result{Title: "Message in #billing", URL: decisionLink, Snippet: text[:60], Content: text, Source: "slack"}
}

// A question about the team's own decision searches the workspace with the
// requester's access and cites the message by its permalink with a quote
// that is in the message; a question about the world, or a request without
// access, never searches it; a failing workspace costs only its hits.
func TestWorkspaceSearch(t *testing.T) {
	tests := []struct {
		name      string
		question  string
		access    *agent.Workspace
		fail      error
		searched  bool
		citesLink bool
	}{
		{name: "internal question", question: "What did we decide about the billing rewrite?", access: &agent.Workspace{Token: "tok-alice"}, searched: true, citesLink: true},
		{name: "internal question in Japanese", question: "請求システムの書き換えについてチームで決めたことは？", access: &agent.Workspace{Token: "tok-alice"}, searched: true, citesLink: true},
		{name: "world question", question: "What are the latest EU AI Act obligations?", access: &agent.Workspace{Token: "tok-alice"}},
		{name: "no access", question: "What did we decide about the billing rewrite?"},
		{name: "workspace fails", question: "What did we decide about the billing rewrite?", access: &agent.Workspace{Token: "tok-alice"}, fail: errors.New("assistant.search.context: ratelimited"), searched: true},
		{name: "token of another user", question: "What did we decide about the billing rewrite?", access: &agent.Workspace{Token: "tok-bob"}, searched: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ws := &workspaceFake{visible: map[string][]search.Result{"tok-alice": {decisionMessage()}}, fail: tc.fail}
			a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: e.store, Notes: e.notes,
				Logger: slog.New(slog.DiscardHandler), Workspace: ws}, e.opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Start(context.Background(), "t-"+strings.ReplaceAll(tc.name, " ", "-"), agent.Request{Question: tc.question, Workspace: tc.access}, e.record)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s, want done", res.Status)
			}
			if got := ws.searches() > 0; got != tc.searched {
				t.Errorf("workspace searched %d times, want searched=%t", ws.searches(), tc.searched)
			}
			var cited *citation.Footnote
			for i, f := range res.Citations.Footnotes {
				if f.URL == decisionLink {
					cited = &res.Citations.Footnotes[i]
				}
			}
			switch {
			case tc.citesLink && cited == nil:
				t.Fatalf("the report does not cite the workspace message; footnotes %+v\n%s", res.Citations.Footnotes, res.Report)
			case tc.citesLink && (cited.Status != citation.Verified || !strings.Contains(decisionMessage().Content, cited.Quote)):
				t.Errorf("the message's citation is %s with quote %q, want verified and in the message", cited.Status, cited.Quote)
			case !tc.citesLink && cited != nil:
				t.Errorf("the report cites a workspace message it should not have: %+v", *cited)
			}
			if !tc.citesLink && strings.Contains(res.Report, decisionLink) {
				t.Errorf("the report names the message's link:\n%s", res.Report)
			}
			for _, p := range ws.private {
				if p {
					t.Errorf("a search included private conversations the request did not allow")
				}
			}
		})
	}
}

// A subtask the replanner marks "workspace" (its prompt explains the field)
// searches the team's messages in the next round, as a planned one does.
func TestReplannedWorkspaceSubtask(t *testing.T) {
	e := newEnv(t)
	e.brain.ReviewScores = func(n int) (agent.Scores, string) {
		if n == 1 {
			return agent.Scores{FactCheck: 0.95, Completeness: 0.5, Logic: 0.7, Format: 1}, "research"
		}
		return agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "write"
	}
	e.brain.Replan = func(string) llmtest.Reply {
		return llmtest.JSON(map[string]any{"subtasks": []map[string]any{
			{"title": "What the team decided about the billing rewrite", "queries": []string{"billing rewrite decision"}, "workspace": true}}})
	}
	ws := &workspaceFake{visible: map[string][]search.Result{"tok-alice": {decisionMessage()}}}
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: e.store, Notes: e.notes,
		Logger: slog.New(slog.DiscardHandler), Workspace: ws}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Start(context.Background(), "replan-workspace",
		agent.Request{Question: "What are the latest EU AI Act obligations?", Workspace: &agent.Workspace{Token: "tok-alice"}}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	if e.brain.Count("supervisor") == 0 {
		t.Fatalf("no second round was planned (supervisor calls %d)", e.brain.Count("supervisor"))
	}
	if ws.searches() == 0 {
		t.Error("the replanned workspace subtask did not search the workspace")
	}
}
