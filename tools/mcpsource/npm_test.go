package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"deepresearch/agent"
	"deepresearch/tools/mcpsource/mcptest"
)

// children are the ids of this process's child processes (Linux).
func children(t *testing.T) []int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestFilesystemServer runs the npm server over a folder: its read tools
// are listed (the others left out by the configuration), a file is read
// and cited by its call, and the server, killed, is started again.
func TestFilesystemServer(t *testing.T) {
	bin := mcptest.FilesystemServer(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kite.md"), []byte("Project Kite launches on 14 March 2027 in Osaka.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{"docs": {Command: bin, Args: []string{dir},
		Deepresearch: Settings{Visibility: VisibilityPrivate, Tools: []string{"read_text_file", "search_files"}}}}
	before := children(t)
	s := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	ctx := context.Background()
	if errs := s.Start(ctx); len(errs) > 0 {
		t.Fatal(errs)
	}
	aud := agent.Audience{Private: true}
	tools, down := s.Tools(ctx, aud)
	if got := names(tools); !slices.Equal(got, []string{"mcp_docs__read_text_file", "mcp_docs__search_files"}) || len(down) > 0 {
		t.Fatalf("tools %v, down %v", got, down)
	}
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "kite.md")})
	read := func() ([]agent.ToolResult, error) {
		return s.Call(ctx, "run", aud, "mcp_docs__read_text_file", args)
	}
	res, err := read()
	if err != nil || len(res) != 1 || !strings.Contains(res[0].Text, "Project Kite launches on 14 March 2027 in Osaka.") ||
		!strings.HasPrefix(res[0].URL, "mcp://docs/read_text_file?path=") || res[0].Title != "docs: kite.md" {
		t.Fatalf("read: %+v, %v", res, err)
	}
	// kill the server (the child this Source started)
	var started []int
	for _, pid := range children(t) {
		if !slices.Contains(before, pid) {
			started = append(started, pid)
		}
	}
	if f, _ := filepath.Glob("/proc/self/task/*/children"); len(f) == 0 {
		t.Log("no /proc children lists here: the crash is not tested")
		return
	}
	if len(started) != 1 {
		t.Fatalf("children started: %v", started)
	}
	if err := syscall.Kill(started[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err = read(); err == nil || !errors.Is(err, agent.ErrSourceUnreachable) {
			break
		}
	}
	if err != nil || len(res) != 1 {
		t.Fatalf("after the crash: %+v, %v", res, err)
	}
}
