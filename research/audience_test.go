package research_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

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
			_, err := r.Start(ctx, research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?", Requester: "U1",
				Options: research.RunOptions{Channel: "C1", Team: "T1", Depth: "quick"}}, nil)
			return err
		}, agent.Audience{Channel: "C1", Team: "T1", Requester: "U1"}},
		{"direct message", func() error {
			_, err := r.Start(ctx, research.StartRequest{RunID: "r2", ThreadID: "t2", Question: "What does the EU AI Act require?", Requester: "U2",
				Options: research.RunOptions{Channel: "D1", Private: true, Team: "T1", Depth: "quick"}}, nil)
			return err
		}, agent.Audience{Channel: "D1", Private: true, Team: "T1", Requester: "U2"}},
		{"digest", func() error {
			_, err := r.Start(ctx, research.StartRequest{RunID: "digest:s1@1", ThreadID: "schedule:s1:1", Question: "What does the EU AI Act require?",
				Options: research.RunOptions{Depth: "quick", Channel: "CDIGEST", Team: "T1", Digest: &research.DigestOf{Schedule: "s1"}}}, nil)
			return err
		}, agent.Audience{Channel: "CDIGEST", Team: "T1"}},
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

// pastReports is a research.ReportStore that finds one report for every
// query and records the queries.
type pastReports struct {
	mu  sync.Mutex
	got []research.ReportQuery
}

func (p *pastReports) SaveReport(context.Context, research.PastReport) error { return nil }

func (p *pastReports) PruneReports(context.Context, time.Time) (int, error) { return 0, nil }

func (p *pastReports) SearchReports(_ context.Context, q research.ReportQuery) ([]research.PastReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, q)
	return []research.PastReport{{RunID: "old", URL: "https://x.slack.com/archives/C1/p1", Title: "AI Act",
		Text: "The AI Act applies in stages.", CreatedAt: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}}, nil
}

// TestPastReportsFollowTheAudience: the past reports a run searches are
// asked for with its audience (team, channel, private, requester), and the
// report found is read like a page, by its URL.
func TestPastReportsFollowTheAudience(t *testing.T) {
	w := newWorld(t)
	store := &pastReports{}
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, w.srv, nil), Search: w.web, Fetch: w.web, Saver: w.store,
		Logger: slog.New(slog.DiscardHandler), Reports: research.ReportSource{Store: store}}, agent.Options{MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)})
	out, err := r.Start(context.Background(), research.StartRequest{RunID: "r1", ThreadID: "t1", Question: "What does the EU AI Act require?", Requester: "U1",
		Options: research.RunOptions{Channel: "C1", Team: "T1", Depth: "quick"}}, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("start: %+v, %v", out, err)
	}
	store.mu.Lock()
	got := slices.Clone(store.got)
	store.mu.Unlock()
	if len(got) == 0 {
		t.Fatal("the past reports were never searched")
	}
	for _, q := range got {
		if q.Team != "T1" || q.Channel != "C1" || q.Private || q.Requester != "U1" || q.Text == "" {
			t.Errorf("query %+v, want the run's audience", q)
		}
	}
	if !slices.Contains(out.Result.Links, "https://x.slack.com/archives/C1/p1") {
		t.Errorf("the past report was not read: %v", out.Result.Links)
	}
}
