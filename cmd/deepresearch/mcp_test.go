package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
