package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent/llm/llmtest"
	"deepresearch/bot/slackfake"
	"deepresearch/tools/mcpsource/mcptest"
)

// TestAskCitesMCPServerDocuments: ask, with DEEPRESEARCH_MCP_CONFIG naming
// the npm filesystem server over a folder of the team's documents, answers
// a question only those documents answer, citing them by a verified quote.
func TestAskCitesMCPServerDocuments(t *testing.T) {
	bin := mcptest.FilesystemServer(t)
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

// TestServeMCPSourceFollowsTheChannelRule: in Slack, a server whose
// results may appear only in private answers is used for a DM and never
// for a channel mention (not even offered to the model); listing the
// channel lets that channel's reports use it.
func TestServeMCPSourceFollowsTheChannelRule(t *testing.T) {
	bin := mcptest.FilesystemServer(t)
	docs, err := filepath.Abs(filepath.Join("testdata", "mcpdocs"))
	if err != nil {
		t.Fatal(err)
	}
	kite := filepath.Join(docs, "kite.md")
	const tool = "mcp_docs__read_text_file"
	for _, tc := range []struct {
		name     string
		dm       bool
		settings map[string]any
		cited    bool
	}{
		{"private server, direct message", true, map[string]any{"visibility": "private"}, true},
		{"private server, channel mention", false, map[string]any{"visibility": "private"}, false},
		{"server listed for the channel", false, map[string]any{"visibility": "channels", "channels": []string{"CBILLING"}}, true},
		{"server listed for another channel", false, map[string]any{"visibility": "channels", "channels": []string{"CELSEWHERE"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspaceWorld(t)
			var mu sync.Mutex
			offered := false
			vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
				if !strings.HasSuffix(r.Node(), ".select") {
					return scripted
				}
				if slices.Contains(r.ToolNames(), tool) {
					mu.Lock()
					offered = true
					mu.Unlock()
					return llmtest.Call(tool, map[string]any{"path": kite})
				}
				return llmtest.Call("search", map[string]any{"queries": []string{"project kite"}})
			}})
			settings := map[string]any{"tools": []string{"read_text_file"}}
			for k, v := range tc.settings {
				settings[k] = v
			}
			data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"docs": map[string]any{"command": bin, "args": []string{docs}, "deepresearch": settings}}})
			path := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			vars["DEEPRESEARCH_MCP_CONFIG"] = path
			vars["SLACK_BOT_TOKEN"], vars["SLACK_APP_TOKEN"], vars["SLACK_API_URL"] = w.fake.BotToken(), w.fake.AppToken(), w.fake.APIURL()
			vars["DEEPRESEARCH_HTTP_ADDR"], vars["DEEPRESEARCH_APPROVE_DRAFT"] = "off", "false"
			srv := startServe(t, w.fake, vars, 90*time.Second)
			srv.connected(1)
			const question = "When does Project Kite launch?"
			channel := "CBILLING"
			var sent slackfake.Sent
			if tc.dm {
				channel = "DALICE"
				sent, err = w.fake.SendMessage(srv.ctx, slackfake.MessageEvent{User: asker, Channel: channel, Text: question})
			} else {
				sent, err = w.fake.SendAppMention(srv.ctx, slackfake.AppMention{User: asker, Channel: channel, Text: question})
			}
			srv.acked(sent, err)
			var report slackfake.File
			srv.waitFor("the report file", func() (ok bool) {
				report, ok = threadFile(w.fake, channel, sent.TS)
				return ok
			})
			content := string(report.Content)
			cites := strings.Contains(content, `"Project Kite launches on 14 March 2027 in Osaka."`) && strings.Contains(content, "mcp://docs/read_text_file?")
			mu.Lock()
			wasOffered := offered
			mu.Unlock()
			if cites != tc.cited || wasOffered != tc.cited {
				t.Errorf("cited %v, offered %v; want %v:\n%s", cites, wasOffered, tc.cited, content)
			}
			if !tc.cited && (strings.Contains(content, "Osaka") || strings.Contains(content, "mcp://")) {
				t.Errorf("the report uses the server where it may not:\n%s", content)
			}
			srv.exitClean()
		})
	}
}
