package research_test

import (
	"context"
	"log/slog"
	"slices"
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

// A route the model decided shows in the run's progress with its reason.
func TestRoutingReasonInProgress(t *testing.T) {
	w := newWorld(t)
	w.brain.ReflectDone = func(int) bool { return false } // gaps left after enough sources
	w.brain.Route = func(string) (string, string) { return "write", "The sources already answer the open points." }
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MinSources: 1, MaxTries: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	var notes []string
	if _, err := r.Start(context.Background(), research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?"},
		func(p research.Progress) { notes = append(notes, p.Note) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(notes, "next step write: The sources already answer the open points.") {
		t.Errorf("no progress note with the routing reason in %q", notes)
	}
}

// A subtask a team researches is running until the last member finishes,
// and done when any found something.
func TestTeamSubtaskProgress(t *testing.T) {
	w := newWorld(t)
	// the third member of each subtask finds nothing
	w.web.Empty = func(q string) bool { return strings.HasSuffix(q, "news analysis") }
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler)}, agent.Options{MaxRounds: 1, MaxTries: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	var last research.Progress
	failed := false
	if _, err := r.Start(context.Background(), research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?",
		Options: research.RunOptions{TeamSize: 3}}, func(p research.Progress) {
		last = p
		for _, s := range p.Subtasks {
			failed = failed || s.State == research.SubtaskFailed
		}
	}); err != nil {
		t.Fatal(err)
	}
	if failed {
		t.Error("a subtask was shown failed when one member of its team found nothing")
	}
	if len(last.Subtasks) != 3 {
		t.Fatalf("%d subtasks shown: %+v", len(last.Subtasks), last.Subtasks)
	}
	for _, s := range last.Subtasks {
		if s.State != research.SubtaskDone {
			t.Errorf("subtask %q is %s", s.Title, s.State)
		}
	}
}
