package agent_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph"
	"deepresearch/graph/memsaver"
)

// env is one test's world: the web (search and fetch), the scripted model
// behind a fake server, and the stores every Agent of the test shares.
type env struct {
	t      *testing.T
	srv    *llmtest.Server
	brain  *agenttest.Brain
	client *llm.Client
	web    *agenttest.World
	store  *memsaver.Store
	notes  *agent.MemNotes
	opts   agent.Options
	now    func() time.Time
	coder  agent.Coder
	events []agent.Event
	mu     sync.Mutex
}

func newEnv(t *testing.T, srvOpts ...llmtest.Option) *env {
	t.Helper()
	b := agenttest.NewBrain()
	e := &env{t: t, brain: b, web: agenttest.NewWorld(), store: memsaver.New(memsaver.Options{}), notes: agent.NewMemNotes()}
	e.srv = llmtest.NewServer(t, b.Respond, srvOpts...)
	e.client = e.newClient(nil)
	return e
}

func (e *env) newClient(tune func(*llm.Options)) *llm.Client {
	e.t.Helper()
	return agenttest.Client(e.t, e.srv, tune)
}

// agent returns a new Agent over the env's store: a "new process" each call.
func (e *env) agent() *agent.Agent {
	e.t.Helper()
	d := agent.Deps{LLM: e.client, Search: e.web, Fetch: e.web, Coder: e.coder, Saver: e.store, Notes: e.notes,
		Logger: slog.New(slog.DiscardHandler), Now: e.now}
	a, err := agent.New(d, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) record(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

func (e *env) kinds() map[agent.EventKind]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := map[agent.EventKind]int{}
	for _, ev := range e.events {
		m[ev.Kind]++
	}
	return m
}

func (e *env) start(thread string, req agent.Request) *agent.Result {
	e.t.Helper()
	res, err := e.agent().Start(context.Background(), thread, req, e.record)
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	return res
}

// researchSearches is a World.OnSearch hook that sees the researchers'
// searches only, numbered from 1 in the order they start: the search a run
// makes ahead of its plan (outside any graph task) passes by it.
func researchSearches(hook func(ctx context.Context, n int) error) func(context.Context, int) error {
	var n atomic.Int64
	return func(ctx context.Context, _ int) error {
		if _, ok := graph.CurrentTask(ctx); !ok {
			return nil
		}
		return hook(ctx, int(n.Add(1)))
	}
}

// researchBarrier is a World.OnSearch hook that holds each of the first n
// researchers' searches until all n are in flight: a run only gets through
// if they search at the same time.
func researchBarrier(n int) func(context.Context, int) error {
	var mu sync.Mutex
	waiting, release := 0, make(chan struct{})
	return researchSearches(func(ctx context.Context, k int) error {
		if k > n {
			return nil
		}
		mu.Lock()
		if waiting++; waiting == n {
			close(release)
		}
		mu.Unlock()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
