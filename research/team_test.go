package research_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/research"
)

// A run's team size reaches the agent: every subtask is researched by
// that many researchers.
func TestRunTeamSizeReachesTheAgent(t *testing.T) {
	w := newWorld(t)
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	if _, err := r.Start(context.Background(), research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?",
		Options: research.RunOptions{Depth: "quick", TeamSize: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	third := false
	for _, req := range w.srv.Requests() {
		if strings.HasPrefix(req.Node(), "researcher[1.0.2].") {
			third = true
		}
	}
	if !third {
		t.Error("no third researcher of the first subtask")
	}
}
