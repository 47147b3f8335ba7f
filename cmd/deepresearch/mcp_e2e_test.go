package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"deepresearch/agent/llm/llmtest"
)

// filesystemServer is the command of the reference MCP filesystem server
// (@modelcontextprotocol/server-filesystem) that .ci/run installs from the
// npm registry under .ci/mcp; DEEPRESEARCH_TEST_MCP_FILESYSTEM names
// another. Outside CI a missing server (or node) skips the test; under
// CI=true it fails it.
func filesystemServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("DEEPRESEARCH_TEST_MCP_FILESYSTEM")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", ".ci", "mcp", "node_modules", ".bin", "mcp-server-filesystem"))
	}
	_, statErr := os.Stat(bin)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "the MCP filesystem server is not installed (run .ci/run, or npm install --prefix .ci/mcp @modelcontextprotocol/server-filesystem): " +
			bin + ", node: " + errString(nodeErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func errString(err error) string {
	if err == nil {
		return "found"
	}
	return err.Error()
}

// TestAskCitesMCPServerDocuments: ask, with DEEPRESEARCH_MCP_CONFIG naming
// the npm filesystem server over a folder of the team's documents, answers
// a question only those documents answer, citing them by a verified quote.
func TestAskCitesMCPServerDocuments(t *testing.T) {
	bin := filesystemServer(t)
	docs, err := filepath.Abs(filepath.Join("testdata", "mcpdocs"))
	if err != nil {
		t.Fatal(err)
	}
	kite := filepath.Join(docs, "kite.md")
	const tool = "mcp_docs__read_text_file"
	var offered []string
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if !strings.HasSuffix(r.Node(), ".select") {
			return scripted
		}
		offered = r.ToolNames()
		if slices.Contains(offered, tool) {
			return llmtest.Call(tool, map[string]any{"path": kite})
		}
		return llmtest.Call("search", map[string]any{"queries": []string{"project kite"}})
	}})
	cfg := map[string]any{"mcpServers": map[string]any{"docs": map[string]any{
		"command": bin, "args": []string{docs},
		"deepresearch": map[string]any{"tools": []string{"read_text_file", "search_files", "list_directory"}, "visibility": "any"},
	}}}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	vars["DEEPRESEARCH_MCP_CONFIG"] = path
	out := filepath.Join(t.TempDir(), "report.md")
	var stdout, stderr bytes.Buffer
	if err := runAsk(context.Background(), []string{"-o", out, "When does Project Kite launch?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cite := "mcp://docs/read_text_file?" + url.Values{"path": {kite}}.Encode()
	want := `"Project Kite launches on 14 March 2027 in Osaka." — docs: kite.md` // the footnote's quote and title
	if !strings.Contains(string(report), want) || !strings.Contains(string(report), cite) {
		t.Fatalf("the report does not cite the MCP document (%s):\n%s\n%s", cite, report, stderr.String())
	}
	if !strings.Contains(stderr.String(), "verified / 0 dropped") {
		t.Errorf("citations not all verified:\n%s", stderr.String())
	}
	if slices.Contains(offered, "mcp_docs__write_file") {
		t.Errorf("a tool the configuration leaves out was offered: %v", offered)
	}
}
