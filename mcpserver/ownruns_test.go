package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
)

// TestOnlyItsOwnRuns: the MCP server shares the bot's agent and database
// in serve, so a client that knows (or guesses) the id of a Slack thread —
// "slack:TEAM:CHANNEL:TS" — must not read its report, answer its approval
// or carry it on: get_report, resume_research and the report resource
// serve the runs deep_research started, nothing else.
func TestOnlyItsOwnRuns(t *testing.T) {
	w := newWorld(t)
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// a private Slack run, done, and another waiting for its requester's approval
	const done, waiting = "slack:T1:D1:1700000000.000100", "slack:T1:C1:1700000000.000200"
	if res, err := a.Start(ctx, done, agent.Request{Question: "What does the EU AI Act require?", NoClarify: true}, nil); err != nil || res.Status != agent.StatusDone {
		t.Fatalf("slack run: %v %+v", err, res)
	}
	if res, err := a.Start(ctx, waiting, agent.Request{Question: "What does the EU AI Act require?", NoClarify: true, ApproveDraft: true}, nil); err != nil || res.Status != agent.StatusInterrupted {
		t.Fatalf("waiting slack run: %v %+v", err, res)
	}
	cs, _ := w.process(nil)
	for _, tc := range []struct {
		name string
		p    *mcp.CallToolParams
	}{
		{"get_report", &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": done}}},
		{"get_report of a waiting run", &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": waiting}}},
		{"resume_research", &mcp.CallToolParams{Name: "resume_research", Arguments: map[string]any{"run_id": waiting, "action": "approve"}}},
	} {
		res, err := cs.CallTool(ctx, tc.p)
		if err == nil && !res.IsError {
			t.Errorf("%s of a Slack thread: served %+v", tc.name, res.StructuredContent)
		}
		if err == nil {
			for _, c := range res.Content {
				if tx, ok := c.(*mcp.TextContent); ok && strings.Contains(tx.Text, "## References") {
					t.Errorf("%s: the Slack run's report reached the client", tc.name)
				}
			}
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: reportScheme + done}); err == nil {
		t.Errorf("the Slack run's report was served as a resource")
	}
	if res, err := a.Get(ctx, waiting); err != nil || res.Status != agent.StatusInterrupted {
		t.Errorf("the Slack run waiting for its requester: %v %+v, want still waiting", err, res)
	}
}
