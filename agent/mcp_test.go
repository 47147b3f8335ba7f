package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/tools/mcpsource"
)

// The team's documents, reachable only through an MCP server: the web
// knows nothing of Project Kite.
const kiteDoc = "Project Kite launches on 14 March 2027 in Osaka. The budget is 3 million euros."

type docArgs struct {
	Path string `json:"path" jsonschema:"the document's path"`
}

// docsServer is an in-memory MCP server with one tool, read_doc; calls
// counts its calls.
func docsServer(calls *atomic.Int32) func(string, mcpsource.Server) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_doc", Description: "Read one of the team's documents.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in docArgs) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: kiteDoc}}}, nil, nil
		})
	return func(string, mcpsource.Server) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// mcpEnv is an env whose web finds nothing, with the docs server as the
// MCP source "docs" (visible as vis says); the model calls read_doc when
// it is offered and records the tools it was offered.
func mcpEnv(t *testing.T, vis mcpsource.Visibility, transport func(string, mcpsource.Server) (mcp.Transport, error)) (*env, *agent.Agent, *atomic.Value) {
	t.Helper()
	e := newEnv(t)
	e.web.Empty = func(string) bool { return true }
	e.opts.MaxRounds = 1
	offered := &atomic.Value{}
	offered.Store([]string(nil))
	e.brain.SelectTools = func(r *llmtest.Request) llmtest.Reply {
		names := r.ToolNames()
		offered.Store(append(offered.Load().([]string), names...))
		if slices.Contains(names, "mcp_docs__read_doc") {
			return llmtest.Call("mcp_docs__read_doc", map[string]any{"path": "kite.md"})
		}
		return llmtest.Call("search", map[string]any{"queries": []string{"Project Kite launch"}})
	}
	src := mcpsource.New(mcpsource.Config{"docs": {Command: "unused", Deepresearch: mcpsource.Settings{Visibility: vis}}},
		mcpsource.Options{Transport: transport, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = src.Close() })
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Saver: e.store, Notes: e.notes,
		Logger: slog.New(slog.DiscardHandler), Tools: src}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, a, offered
}

// TestMCPSourceAnswersWithVerifiedQuote: a question whose answer is only
// in the MCP server's documents gets a report that cites them by a
// verified quote.
func TestMCPSourceAnswersWithVerifiedQuote(t *testing.T) {
	var calls atomic.Int32
	e, a, _ := mcpEnv(t, mcpsource.VisibilityPrivate, docsServer(&calls))
	res, err := a.Start(context.Background(), "kite", agent.Request{Question: "When does Project Kite launch?", NoClarify: true,
		Audience: &agent.Audience{Channel: "D1", Private: true}}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Fatal("the MCP tool was never called")
	}
	const cite = "mcp://docs/read_doc?path=kite.md"
	if !strings.Contains(res.Report, "Project Kite launches on 14 March 2027 in Osaka.") || !strings.Contains(res.Report, cite) {
		t.Fatalf("the report does not quote and cite the MCP document:\n%s", res.Report)
	}
	if res.Citations.Verified == 0 {
		t.Errorf("no verified citation: %+v\n%s", res.Citations, res.Report)
	}
	if !slices.ContainsFunc(res.Sources, func(s agent.SourceRef) bool { return s.URL == cite }) {
		t.Errorf("sources %+v lack %s", res.Sources, cite)
	}
}

// TestMCPSourceNeverInChannelReport is the permission rule: a server whose
// results may appear only in private answers is neither offered nor
// called for a report posted in a channel, and the report never cites it.
func TestMCPSourceNeverInChannelReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		aud  *agent.Audience
		vis  mcpsource.Visibility
	}{
		{"private server, channel report", &agent.Audience{Channel: "C_GENERAL"}, mcpsource.VisibilityPrivate},
		{"private server, audience unknown", nil, mcpsource.VisibilityPrivate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			e, a, offered := mcpEnv(t, tc.vis, docsServer(&calls))
			res, err := a.Start(context.Background(), "kite", agent.Request{Question: "When does Project Kite launch?", NoClarify: true,
				Audience: tc.aud}, e.record)
			if err != nil {
				t.Fatal(err)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("the private server was called %d times for a channel report", n)
			}
			if got := offered.Load().([]string); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp_") }) {
				t.Errorf("offered %v", got)
			}
			if strings.Contains(res.Report, "mcp://") || strings.Contains(res.Report, "Osaka") {
				t.Errorf("the channel report uses the private source:\n%s", res.Report)
			}
		})
	}
}

// TestMCPSourceUnreachableNamedInReport: a server that cannot be reached
// costs only its own results, and the report says so.
func TestMCPSourceUnreachableNamedInReport(t *testing.T) {
	down := func(string, mcpsource.Server) (mcp.Transport, error) { return nil, errors.New("exec: npx: not found") }
	e, a, _ := mcpEnv(t, mcpsource.VisibilityAny, down)
	e.web.Empty = nil // the web answers
	res, err := a.Start(context.Background(), "t", agent.Request{Question: "What is the EU AI Act timeline?", NoClarify: true}, e.record)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone || !strings.Contains(res.Report, "Source could not be reached: docs") {
		t.Fatalf("status %s, report:\n%s", res.Status, res.Report)
	}
	if res.Citations.Verified == 0 {
		t.Errorf("the web's findings were lost too: %+v", res.Citations)
	}
}
