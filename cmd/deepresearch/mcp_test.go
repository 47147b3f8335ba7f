package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/bot/slackfake"
)

// TestMCPCommand speaks to `deepresearch mcp` over its stdin and stdout
// with the SDK's client: deep_research returns the report of a run with
// the same settings as ask, and get_report finds it by id.
func TestMCPCommand(t *testing.T) {
	vars, _ := newAskWorld(t, worldOpts{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		err := runMCP(context.Background(), nil, getenv(vars), inR, outW, &stderr)
		outW.Close()
		done <- err
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?"}})
	if err != nil || res.IsError {
		t.Fatalf("deep_research: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, `[^1]: "The EU AI Act entered into force on 1 August 2024."`) {
		t.Fatalf("report:\n%s", text)
	}
	id := res.StructuredContent.(map[string]any)["run_id"].(string)
	again, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": id}})
	if err != nil || again.IsError || again.StructuredContent.(map[string]any)["status"] != "done" {
		t.Fatalf("get_report: %v %+v", err, again)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatalf("mcp ended with %v\n%s", err, stderr.String())
	}
}

// TestMCPConfigProblemsNamedAtStart: an unreadable configuration, and each
// server that cannot be started, is named in one line; the servers that
// work still serve.
func TestMCPConfigProblemsNamedAtStart(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		want      []string // one line each
		serves    bool
	}{
		{"unreadable", "", []string{"DEEPRESEARCH_MCP_CONFIG: no MCP sources"}, false},
		{"not json", "{", []string{"DEEPRESEARCH_MCP_CONFIG: no MCP sources"}, false},
		{"a server that does not start", `{"mcpServers": {"gone": {"command": "` + dir + `/no-such-server"}}}`,
			[]string{"DEEPRESEARCH_MCP_CONFIG: mcp server gone could not be reached"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := dir + "/" + strings.ReplaceAll(tc.name, " ", "-") + ".json"
			if tc.doc != "" {
				if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			src := mcpSources(context.Background(), path, slog.New(slog.NewTextHandler(&logs, nil)))
			if (src != nil) != tc.serves {
				t.Errorf("source %v, want one: %v", src, tc.serves)
			}
			if src != nil {
				src.Close()
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("log lines:\n%s", logs.String())
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %q lacks %q", lines[i], w)
				}
			}
		})
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPEndpoint: serve with DEEPRESEARCH_MCP_ADDR offers deep
// research over streamable HTTP to a client with the bearer token, and
// refuses one without it.
func TestServeMCPEndpoint(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	addr := freeAddr(t)
	const token = "mcp-token-0123456789"
	srv := startServe(t, fake, serveEnv(t, fake, map[string]string{"DEEPRESEARCH_HTTP_ADDR": "off",
		"DEEPRESEARCH_MCP_ADDR": addr, "DEEPRESEARCH_MCP_TOKEN": token}), 60*time.Second)
	srv.connected(1)
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/", HTTPClient: &http.Client{Transport: bearerTransport{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(srv.ctx, tr, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.stderr.String())
	}
	res, err := cs.CallTool(srv.ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?"}})
	if err != nil || res.IsError {
		t.Fatalf("deep_research: %v %+v\n%s", err, res, srv.stderr.String())
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"The EU AI Act entered into force on 1 August 2024."`) {
		t.Errorf("report:\n%s", text)
	}
	cs.Close()
	srv.exitClean()
	if strings.Contains(srv.stderr.String(), token) {
		t.Error("the token was logged")
	}
}
