package research_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/research"
)

// audiences is an agent.ToolSource that offers nothing and records the
// audiences it was asked for.
type audiences struct {
	mu  sync.Mutex
	got []agent.Audience
}

func (a *audiences) Tools(_ context.Context, aud agent.Audience) ([]agent.ExternalTool, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, aud)
	return nil, nil
}

func (a *audiences) Call(context.Context, string, agent.Audience, string, json.RawMessage) ([]agent.ToolResult, error) {
	return nil, nil
}

func (a *audiences) seen() []agent.Audience {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Compact(slices.Clone(a.got))
}

// TestRunsCarryTheirAudience: where a run's report is seen reaches the
// MCP sources' rule — a thread's channel and whether it is private, and a
// digest's channel (never private).
func TestRunsCarryTheirAudience(t *testing.T) {
	w := newWorld(t)
	src := &audiences{}
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler), Tools: src}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func() error
		want agent.Audience
	}{
		{"channel thread", func() error {
			_, err := r.Start(ctx, research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?",
				Options: research.RunOptions{Channel: "C1", Depth: "quick"}}, nil)
			return err
		}, agent.Audience{Channel: "C1"}},
		{"direct message", func() error {
			_, err := r.Start(ctx, research.StartRequest{RunID: "r2", ThreadID: "t2", Question: "What does the EU AI Act require?",
				Options: research.RunOptions{Channel: "D1", Private: true, Depth: "quick"}}, nil)
			return err
		}, agent.Audience{Channel: "D1", Private: true}},
		{"digest", func() error {
			_, err := r.Research(ctx, research.DigestRequest{ThreadID: "schedule:s1:1", Question: "What does the EU AI Act require?",
				Depth: "quick", Channel: "CDIGEST"})
			return err
		}, agent.Audience{Channel: "CDIGEST"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src.mu.Lock()
			src.got = nil
			src.mu.Unlock()
			if err := tc.run(); err != nil {
				t.Fatal(err)
			}
			if got := src.seen(); !slices.Equal(got, []agent.Audience{tc.want}) {
				t.Errorf("audiences %+v, want %+v", got, tc.want)
			}
		})
	}
}
