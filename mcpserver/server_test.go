package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph/memsaver"
)

// world is a scripted model, a fake web and a checkpoint store shared by
// every "process" (Server) of a test.
type world struct {
	t     *testing.T
	brain *agenttest.Brain
	srv   *llmtest.Server
	web   *agenttest.World
	store *memsaver.Store
	ids   atomic.Int32
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, brain: agenttest.NewBrain(), web: agenttest.NewWorld(), store: memsaver.New(memsaver.Options{})}
	w.srv = llmtest.NewServer(t, w.brain.Respond)
	return w
}

// process starts a Server (a new process: a new Agent over the shared
// store) and connects an SDK client to it over the in-memory transport.
// stop ends the process as a crash or shutdown would.
func (w *world) process(progress func(*mcp.ProgressNotificationParams)) (cs *mcp.ClientSession, stop func()) {
	t := w.t
	t.Helper()
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := New(a, Options{Logger: slog.New(slog.DiscardHandler), NewID: func() string { return fmt.Sprintf("mcp-test-%d", w.ids.Add(1)) }})
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Run(ctx, st)
	}()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress(r.Params) }
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			_ = cs.Close()
			<-served
		})
	}
	t.Cleanup(stop)
	return cs, stop
}

func call(ctx context.Context, t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (Report, string) {
	t.Helper()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		t.Fatalf("%s failed: %s", p.Name, text)
	}
	var r Report
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: structured content %s: %v", p.Name, b, err)
	}
	return r, text
}

func TestToolsListed(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.process(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "deep_research" {
			b, _ := json.Marshal(tl.InputSchema)
			var s struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(b, &s)
			if !slices.Equal(s.Required, []string{"question"}) || s.Properties["language"] == nil || s.Properties["approve_plan"] == nil {
				t.Errorf("deep_research schema %s", b)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"deep_research", "get_report", "resume_research"}) {
		t.Errorf("tools %v", names)
	}
}

func TestDeepResearchBlockingWithProgress(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	var notes []string
	cs, _ := w.process(func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		if p.ProgressToken == "tok" {
			notes = append(notes, p.Message)
		}
	})
	ctx := context.Background()
	p := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?"}}
	p.SetProgressToken("tok")
	r, text := call(ctx, t, cs, p)
	if r.Status != "done" || r.RunID != "mcp-test-1" || !strings.Contains(r.Report, "## References") || !strings.HasPrefix(text, r.Report) {
		t.Fatalf("report %+v\ntext %s", r, text)
	}
	mu.Lock()
	got := slices.Clone(notes)
	mu.Unlock()
	if !slices.Contains(got, "planning") || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "read: ") }) {
		t.Errorf("progress notifications %q", got)
	}
	again, _ := call(ctx, t, cs, &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": r.RunID}})
	if again.Status != "done" || again.Report != r.Report {
		t.Errorf("get_report = %+v", again)
	}
	// the finished report is a resource too
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.Resource})
	if err != nil || r.Resource != "deepresearch://report/mcp-test-1" || len(rr.Contents) != 1 || rr.Contents[0].Text != r.Report {
		t.Errorf("resource %q: %+v, %v", r.Resource, rr, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "deepresearch://report/mcp-none"}); err == nil {
		t.Error("a report that does not exist was read")
	}
}

// TestRestartFinishesTheRun: a run started with wait=false, stopped by the
// server's end in the middle of the research, is finished by the next
// process when the client asks for its report.
func TestRestartFinishesTheRun(t *testing.T) {
	w := newWorld(t)
	entered := w.brain.HangAt("writer")
	cs, stop := w.process(nil)
	ctx := context.Background()
	r, _ := call(ctx, t, cs, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?", "wait": false}})
	if r.Status != "running" {
		t.Fatalf("wait=false: %+v", r)
	}
	<-entered
	stop() // the process ends while the writer works
	w.brain.HangAt("")
	cs2, _ := w.process(nil)
	got, _ := call(ctx, t, cs2, &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": r.RunID, "wait": true}})
	if got.Status != "done" || !strings.Contains(got.Report, "## References") {
		t.Fatalf("after the restart: %+v", got)
	}
}

// TestCancelledCallCancelsTheRun: the client cancels the blocking call;
// the run ends as cancelled (it is not carried on later).
func TestCancelledCallCancelsTheRun(t *testing.T) {
	w := newWorld(t)
	entered := w.brain.HangAt("writer")
	cs, _ := w.process(nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?"}})
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	w.brain.HangAt("")
	// the cancellation reaches the store once the server has seen it
	var r Report
	for range 500 {
		r, _ = call(context.Background(), t, cs, &mcp.CallToolParams{Name: "get_report", Arguments: map[string]any{"run_id": "mcp-test-1"}})
		if r.Status == "cancelled" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.Status != "cancelled" {
		t.Fatalf("after the cancelled call: %+v", r)
	}
}

func TestApprovalSteps(t *testing.T) {
	w := newWorld(t)
	cs, _ := w.process(nil)
	ctx := context.Background()
	r, text := call(ctx, t, cs, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "What does the EU AI Act require?", "approve_plan": true}})
	if r.Status != "waiting" || r.Waiting == nil || r.Waiting.Kind != "approve_plan" || len(r.Waiting.Plan) == 0 || !slices.Contains(r.Waiting.Actions, "approve") {
		t.Fatalf("approve_plan: %+v\n%s", r, text)
	}
	done, _ := call(ctx, t, cs, &mcp.CallToolParams{Name: "resume_research", Arguments: map[string]any{"run_id": r.RunID, "action": "approve"}})
	if done.Status != "done" || done.Report == "" {
		t.Fatalf("after approval: %+v", done)
	}
}
