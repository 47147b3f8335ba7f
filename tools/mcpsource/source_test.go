package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
)

type lookupIn struct {
	Query string `json:"query" jsonschema:"what to look up"`
}

// fakeServer is an MCP server reached over the SDK's in-memory transport;
// every connection is a new session, so a test can crash one.
type fakeServer struct {
	t        *testing.T
	srv      *mcp.Server
	connects atomic.Int32
	mu       sync.Mutex
	sessions []*mcp.ServerSession
	fail     error // connections fail with it
}

func newFake(t *testing.T, setup func(*mcp.Server)) *fakeServer {
	f := &fakeServer{t: t, srv: mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)}
	setup(f.srv)
	return f
}

func (f *fakeServer) transport() (mcp.Transport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	f.connects.Add(1)
	f.sessions = append(f.sessions, ss)
	return ct, nil
}

// crash ends every server session, as a dying process would.
func (f *fakeServer) crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sessions {
		_ = s.Close()
	}
	f.sessions = nil
}

func lookupServer(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look up the team wiki.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "The wiki says: " + in.Query + " ships in March.\x1b[31m"}}}, nil, nil
		})
}

type world map[string]*fakeServer

func (w world) source(t *testing.T, cfg Config, o Options) *Source {
	t.Helper()
	o.Transport = func(name string, _ Server) (mcp.Transport, error) {
		f, ok := w[name]
		if !ok {
			return nil, fmt.Errorf("no server %s", name)
		}
		return f.transport()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := New(cfg, o)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func stdio(vis Visibility, channels ...string) Server {
	return Server{Command: "unused", Deepresearch: Settings{Visibility: vis, Channels: channels}}
}

func names(ts []agent.ExternalTool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestToolsAndCall(t *testing.T) {
	w := world{"wiki": newFake(t, lookupServer)}
	s := w.source(t, Config{"wiki": stdio(VisibilityAny)}, Options{})
	ctx := context.Background()
	tools, down := s.Tools(ctx, agent.Audience{Channel: "C1"})
	if len(down) != 0 || len(tools) != 1 {
		t.Fatalf("tools %v, down %v", names(tools), down)
	}
	tl := tools[0]
	if tl.Name != "mcp_wiki__lookup" || tl.Source != "wiki" || tl.Description != "Look up the team wiki." {
		t.Errorf("tool = %+v", tl)
	}
	// the schema as the server published it
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(tl.Schema, &schema); err != nil || schema.Properties["query"]["type"] != "string" || !slices.Contains(schema.Required, "query") {
		t.Errorf("schema %s (%v)", tl.Schema, err)
	}
	res, err := s.Call(ctx, "run1", agent.Audience{Channel: "C1"}, tl.Name, json.RawMessage(`{"query":"Project Kite"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("results %+v", res)
	}
	r := res[0]
	if r.URL != "mcp://wiki/lookup?query=Project+Kite" {
		t.Errorf("URL = %q", r.URL)
	}
	if r.Text != "The wiki says: Project Kite ships in March.[31m" {
		t.Errorf("text = %q (control characters must be gone)", r.Text)
	}
}

func TestVisibility(t *testing.T) {
	cfg := Config{
		"open":    stdio(VisibilityAny),
		"team":    stdio(VisibilityChannels, "C_TEAM"),
		"secrets": stdio(VisibilityPrivate),
		"unset":   {Command: "unused", Deepresearch: Settings{Visibility: VisibilityPrivate}},
	}
	w := world{}
	for n := range cfg {
		w[n] = newFake(t, lookupServer)
	}
	s := w.source(t, cfg, Options{})
	for _, tc := range []struct {
		name string
		aud  agent.Audience
		want []string
	}{
		{"a public channel", agent.Audience{Channel: "C_OTHER"}, []string{"open"}},
		{"the listed channel", agent.Audience{Channel: "C_TEAM"}, []string{"open", "team"}},
		{"a private answer", agent.Audience{Channel: "D1", Private: true}, []string{"open", "secrets", "unset"}},
		{"nobody named", agent.Audience{}, []string{"open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tools, _ := s.Tools(ctx, tc.aud)
			var got []string
			for _, tl := range tools {
				got = append(got, tl.Source)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sources %v, want %v", got, tc.want)
			}
			// a call of a tool not offered here is refused too
			for n := range cfg {
				_, err := s.Call(ctx, "run-"+tc.name, tc.aud, exposed(n, "lookup"), json.RawMessage(`{"query":"x"}`))
				if allowed := slices.Contains(tc.want, n); allowed != (err == nil) {
					t.Errorf("call %s: err %v, allowed %v", n, err, allowed)
				}
				if !slices.Contains(tc.want, n) && !errors.Is(err, ErrNotAllowed) && !errors.Is(err, ErrUnknownTool) {
					t.Errorf("call %s: err %v, want ErrNotAllowed", n, err)
				}
			}
		})
	}
}

// readOnly marks a fake's tool as one that only reads, as the reference
// servers mark their read tools.
var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

// TestAllowedTools: the settings' list decides which tools the agent may
// call; with no list, only the tools the server marks read-only: a tool
// that changes things (delete_page) is never offered or called unless
// named, whatever the model (steered by a page it read) asks for.
func TestAllowedTools(t *testing.T) {
	w := world{"wiki": newFake(t, func(s *mcp.Server) {
		lookupServer(s)
		for _, name := range []string{"delete_page", "edit_page"} {
			mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "changed"}}}, nil, nil
			})
		}
	})}
	for _, tc := range []struct {
		name    string
		listed  []string
		offered []string
		refused []string
	}{
		{"listed", []string{"lookup"}, []string{"mcp_wiki__lookup"}, []string{"mcp_wiki__delete_page", "mcp_wiki__edit_page"}},
		{"no list: read-only tools only", nil, []string{"mcp_wiki__lookup"}, []string{"mcp_wiki__delete_page", "mcp_wiki__edit_page"}},
		{"a write tool named", []string{"lookup", "edit_page"}, []string{"mcp_wiki__edit_page", "mcp_wiki__lookup"}, []string{"mcp_wiki__delete_page"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{"wiki": {Command: "x", Deepresearch: Settings{Visibility: VisibilityAny, Tools: tc.listed}}}
			s := w.source(t, cfg, Options{})
			tools, _ := s.Tools(context.Background(), agent.Audience{})
			if got := names(tools); !slices.Equal(got, tc.offered) {
				t.Errorf("tools %v, want %v", got, tc.offered)
			}
			for _, name := range tc.refused {
				if _, err := s.Call(context.Background(), "r", agent.Audience{}, name, nil); !errors.Is(err, ErrNotAllowed) {
					t.Errorf("call %s: err = %v, want ErrNotAllowed", name, err)
				}
			}
		})
	}
}

func TestResourcesAreCited(t *testing.T) {
	w := world{"docs": newFake(t, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "find", Annotations: readOnly}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Kite launches in March."},
				&mcp.ResourceLink{URI: "https://wiki.example/kite", Name: "kite", Title: "Kite plan"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://kite/risks", Text: "Risk: the vendor is late."}},
			}}, nil, nil
		})
	})}
	s := w.source(t, Config{"docs": stdio(VisibilityAny)}, Options{})
	ctx := context.Background()
	s.Tools(ctx, agent.Audience{})
	res, err := s.Call(ctx, "r", agent.Audience{}, "mcp_docs__find", json.RawMessage(`{"query":"kite"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.ToolResult{
		{URL: "https://wiki.example/kite", Title: "Kite plan", Text: "Kite launches in March."},
		{URL: "mcp://docs/resource?uri=notes%3A%2F%2Fkite%2Frisks", Title: "risks", Text: "Risk: the vendor is late."},
	}
	if !slices.Equal(res, want) {
		t.Errorf("results\n%+v\nwant\n%+v", res, want)
	}
}

func TestLimits(t *testing.T) {
	long := strings.Repeat("x", 500)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	w := world{"wiki": newFake(t, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "lookup", Annotations: readOnly}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "slow", Annotations: readOnly}, func(ctx context.Context, _ *mcp.CallToolRequest, _ lookupIn) (*mcp.CallToolResult, any, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{}, nil, nil
		})
	})}
	s := w.source(t, Config{"wiki": stdio(VisibilityAny)}, Options{MaxCallsPerRun: 2, MaxResultChars: 100, CallTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	s.Tools(ctx, agent.Audience{})
	args := json.RawMessage(`{"query":"q"}`)
	res, err := s.Call(ctx, "run1", agent.Audience{}, "mcp_wiki__lookup", args)
	if err != nil || len(res) != 1 || len(res[0].Text) != 100 {
		t.Fatalf("capped result: %v, %v", res, err)
	}
	// a call that outlives its timeout costs the source, as unreachable
	if _, err := s.Call(ctx, "run1", agent.Audience{}, "mcp_wiki__slow", args); !errors.Is(err, agent.ErrSourceUnreachable) {
		t.Errorf("slow call: %v", err)
	}
	if _, err := s.Call(ctx, "run1", agent.Audience{}, "mcp_wiki__lookup", args); !errors.Is(err, ErrCallLimit) {
		t.Errorf("third call of run1: %v, want ErrCallLimit", err)
	}
	if _, err := s.Call(ctx, "run2", agent.Audience{}, "mcp_wiki__lookup", args); err != nil {
		t.Errorf("another run: %v", err)
	}
}

func TestDownServerCostsOnlyItself(t *testing.T) {
	broken := newFake(t, lookupServer)
	broken.fail = errors.New("exec: no such file")
	w := world{"wiki": newFake(t, lookupServer), "tracker": broken}
	now := time.Unix(0, 0)
	var clockMu sync.Mutex
	s := w.source(t, Config{"wiki": stdio(VisibilityAny), "tracker": stdio(VisibilityAny)},
		Options{RetryAfter: time.Minute, Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }})
	errs := s.Start(context.Background())
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "mcp server tracker") {
		t.Fatalf("start errors %v", errs)
	}
	tools, down := s.Tools(context.Background(), agent.Audience{})
	if got := names(tools); !slices.Equal(got, []string{"mcp_wiki__lookup"}) || !slices.Equal(down, []string{"tracker"}) {
		t.Errorf("tools %v, down %v", got, down)
	}
	// the server comes back: it is tried again after RetryAfter, not before
	broken.mu.Lock()
	broken.fail = nil
	broken.mu.Unlock()
	if _, down := s.Tools(context.Background(), agent.Audience{}); len(down) != 1 {
		t.Errorf("retried too soon: down %v", down)
	}
	clockMu.Lock()
	now = now.Add(2 * time.Minute)
	clockMu.Unlock()
	if tools, down := s.Tools(context.Background(), agent.Audience{}); len(down) != 0 || len(tools) != 2 {
		t.Errorf("after RetryAfter: tools %v, down %v", names(tools), down)
	}
}

func TestReconnectAfterCrash(t *testing.T) {
	f := newFake(t, lookupServer)
	w := world{"wiki": f}
	s := w.source(t, Config{"wiki": stdio(VisibilityAny)}, Options{})
	ctx := context.Background()
	if errs := s.Start(ctx); len(errs) > 0 {
		t.Fatal(errs)
	}
	f.crash()
	// the crash is seen when the session ends, or by the next call; either
	// way a call after it reaches the server again
	var err error
	for range 3 {
		if _, err = s.Call(ctx, "r", agent.Audience{}, "mcp_wiki__lookup", json.RawMessage(`{"query":"q"}`)); err == nil {
			break
		}
		if !errors.Is(err, agent.ErrSourceUnreachable) {
			t.Fatalf("call after crash: %v", err)
		}
	}
	if err != nil {
		t.Fatalf("no reconnection: %v", err)
	}
	if n := f.connects.Load(); n != 2 {
		t.Errorf("connections = %d, want 2", n)
	}
}

func TestToolListRefreshed(t *testing.T) {
	f := newFake(t, lookupServer)
	w := world{"wiki": f}
	s := w.source(t, Config{"wiki": stdio(VisibilityAny)}, Options{})
	ctx := context.Background()
	if tools, _ := s.Tools(ctx, agent.Audience{}); len(tools) != 1 {
		t.Fatalf("tools %v", names(tools))
	}
	sv := s.servers["wiki"]
	mcp.AddTool(f.srv, &mcp.Tool{Name: "search_pages", Annotations: readOnly}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	// the server announces the change; wait for the notification to land
	for i := 0; ; i++ {
		sv.mu.Lock()
		stale := sv.stale
		sv.mu.Unlock()
		if stale {
			break
		}
		if i > 2000 {
			t.Fatal("no tools/list_changed notification")
		}
		time.Sleep(time.Millisecond)
	}
	tools, _ := s.Tools(ctx, agent.Audience{})
	if got := names(tools); !slices.Equal(got, []string{"mcp_wiki__lookup", "mcp_wiki__search_pages"}) {
		t.Errorf("tools after list_changed: %v", got)
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	const token = "sk-live-abcdef123456"
	broken := newFake(t, lookupServer)
	broken.fail = fmt.Errorf("401 for Bearer %s", token)
	var logs bytes.Buffer
	w := world{"wiki": broken}
	cfg := Config{"wiki": {URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer " + token},
		Deepresearch: Settings{Visibility: VisibilityAny}}}
	s := w.source(t, cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	errs := s.Start(context.Background())
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	if strings.Contains(errs[0].Error(), token) || strings.Contains(logs.String(), token) {
		t.Errorf("token leaked: %v / %s", errs[0], logs.String())
	}
}

// TestCallBeforeToolsListed: a run carried on after a restart calls a tool
// its select step chose in the earlier process; this process has not
// listed the server's tools yet.
func TestCallBeforeToolsListed(t *testing.T) {
	w := world{"wiki": newFake(t, lookupServer)}
	s := w.source(t, Config{"wiki": stdio(VisibilityAny)}, Options{})
	res, err := s.Call(context.Background(), "r", agent.Audience{}, "mcp_wiki__lookup", json.RawMessage(`{"query":"Kite"}`))
	if err != nil || len(res) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, err := s.Call(context.Background(), "r", agent.Audience{}, "mcp_wiki__nothing", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestStreamableHTTPServer: a server configured by url and headers is
// reached over streamable HTTP with those headers; without the right
// token it is named as unreachable.
func TestStreamableHTTPServer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "wiki", Version: "1"}, nil)
	lookupServer(srv)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"good-token", true}, {"bad-token", false}} {
		t.Run(tc.token, func(t *testing.T) {
			cfg := Config{"wiki": {URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer " + tc.token}, Deepresearch: Settings{Visibility: VisibilityAny}}}
			var logs bytes.Buffer
			s := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			defer s.Close()
			ctx := context.Background()
			tools, down := s.Tools(ctx, agent.Audience{})
			if !tc.ok {
				if len(tools) != 0 || !slices.Equal(down, []string{"wiki"}) {
					t.Errorf("tools %v, down %v", names(tools), down)
				}
				if strings.Contains(logs.String(), tc.token) {
					t.Errorf("the token was logged:\n%s", logs.String())
				}
				return
			}
			res, err := s.Call(ctx, "r", agent.Audience{}, "mcp_wiki__lookup", json.RawMessage(`{"query":"Kite"}`))
			if err != nil || len(res) != 1 || !strings.Contains(res[0].Text, "Kite ships in March") {
				t.Fatalf("%+v, %v", res, err)
			}
		})
	}
}
