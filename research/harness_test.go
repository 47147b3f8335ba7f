package research_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph/memsaver"
	"deepresearch/research"
)

// What agenttest's default script plans and writes: a quick research keeps
// the plan's first two subtasks.
var plan = []string{"Timeline", "Penalties"}

const (
	reportTitle   = "Report"
	reportSummary = "This report summarises what the sources say about the question."
)

// world is one test's fakes: the agenttest web behind search and fetch, the
// agenttest brain behind a fake model server, and the checkpoint store every
// researcher of the test shares.
type world struct {
	t     *testing.T
	brain *agenttest.Brain
	web   *agenttest.World
	srv   *llmtest.Server
	store *memsaver.Store
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, brain: agenttest.NewBrain(), web: agenttest.NewWorld(), store: memsaver.New(memsaver.Options{})}
	w.srv = llmtest.NewServer(t, w.brain.Respond)
	return w
}

// researcher returns a new agent and adapter over the world's store: a
// "new process" each call.
func (w *world) researcher() (*research.Runner, *agent.Agent) {
	w.t.Helper()
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(w.t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MinSources: 2})
	if err != nil {
		w.t.Fatal(err)
	}
	return research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)}), a
}

// stopInWriter runs run until it calls the writer, then cancels its
// context, as a process stopping mid-run (shutdown, lost lease) does; run
// must return context.Canceled. The writer answers again afterwards.
func (w *world) stopInWriter(ctx context.Context, run func(context.Context) error) {
	w.t.Helper()
	entered := w.brain.HangAt("writer")
	defer w.brain.HangAt("")
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	select {
	case <-entered:
	case err := <-done:
		w.t.Fatalf("the run ended before the writer: %v", err)
	}
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			w.t.Fatalf("the stopped run returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		w.t.Fatal("the stopped run did not return")
	}
}

// recorder is a ProgressSink that keeps every snapshot.
type recorder struct {
	mu    sync.Mutex
	snaps []research.Progress
}

func (r *recorder) sink(p research.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, p)
}

func (r *recorder) all() []research.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]research.Progress(nil), r.snaps...)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
