package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent/llm/llmtest"
)

// buildBinary builds deepresearch into a temporary folder.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "deepresearch")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestMCPProcessKilledMidResearch: `deepresearch mcp` as a process of its
// own, driven by the SDK's command transport, is killed while the writer
// works on a run started with wait=false; a new process, asked for the
// report, carries the run on from its checkpoints (same database) and
// returns it.
func TestMCPProcessKilledMidResearch(t *testing.T) {
	bin := buildBinary(t)
	var hang atomic.Bool
	hang.Store(true)
	writing := make(chan struct{})
	var once sync.Once
	vars, _ := newAskWorld(t, worldOpts{wrap: func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if r.Node() == "writer" && hang.Load() {
			once.Do(func() { close(writing) })
			return llmtest.Hang()
		}
		return scripted
	}})
	start := func() (*mcp.ClientSession, *exec.Cmd) {
		cmd := exec.Command(bin, "mcp")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs, cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, cmd := start()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?", "wait": false}})
	if err != nil || res.IsError {
		t.Fatalf("deep_research: %v %+v", err, res)
	}
	id, _ := res.StructuredContent.(map[string]any)["run_id"].(string)
	select {
	case <-writing:
	case <-ctx.Done():
		t.Fatal("the research never reached the writer")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	hang.Store(false)

	cs2, _ := start()
	defer cs2.Close()
	got, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": id, "wait": true}})
	if err != nil || got.IsError {
		t.Fatalf("get_report: %v %+v", err, got)
	}
	text := got.Content[0].(*mcp.TextContent).Text
	if got.StructuredContent.(map[string]any)["status"] != "done" || !strings.Contains(text, `[^1]: "The EU AI Act entered into force on 1 August 2024."`) {
		t.Fatalf("after the restart:\n%s", text)
	}
}
