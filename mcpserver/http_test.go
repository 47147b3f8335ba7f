package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPEndpoint: the streamable-HTTP endpoint answers only with the
// bearer token, and then runs a research like stdio.
func TestHTTPEndpoint(t *testing.T) {
	w := newWorld(t)
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := New(a, Options{Logger: slog.New(slog.DiscardHandler), NewID: func() string { return fmt.Sprintf("mcp-http-%d", w.ids.Add(1)) }})
	ts := httptest.NewServer(s.HTTPHandler(ctx, "s3cret-token"))
	t.Cleanup(func() { cancel(); ts.Close(); s.Wait() })
	connect := func(token string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	}
	for _, bad := range []string{"", "wrong"} {
		if cs, err := connect(bad); err == nil {
			cs.Close()
			t.Errorf("token %q: connected", bad)
		}
	}
	cs, err := connect("s3cret-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, text := call(context.Background(), t, cs, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?"}})
	if r.Status != "done" || !strings.Contains(text, "## References") {
		t.Fatalf("%+v", r)
	}
}
