package research_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph/memsaver"
	"deepresearch/research"
	"deepresearch/tools/search"
)

// The test helpers follow agent/harness_test.go's pattern: a small web
// corpus behind a fake search and fetcher, and a "brain" that answers each
// agent step on the fake LLM server from what the prompt contains.

type page struct{ url, title, text string }

var corpus = []page{
	{"https://news.example/ai-act-timeline", "AI Act timeline", "The EU AI Act entered into force on 1 August 2024. Prohibited practices apply from 2 February 2025."},
	{"https://law.example/penalties", "AI Act penalties", "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover. Lower tiers apply to other infringements."},
	{"https://blog.example/sme", "AI Act and SMEs", "Small and medium-sized enterprises benefit from regulatory sandboxes. The Commission publishes guidance."},
	{"https://gov.example/gpai", "GPAI code of practice", "Providers of general-purpose AI models must publish a summary of training content. A code was published in July 2025."},
	{"https://think.example/analysis", "Analysis of enforcement", "National market surveillance authorities enforce most provisions. The AI Office supervises general-purpose AI models."},
}

func firstSentence(text string) string {
	if i := strings.Index(text, ". "); i > 0 {
		return text[:i+1]
	}
	return text
}

type fakeSearch struct{}

func (fakeSearch) Search(_ context.Context, q search.Query) ([]search.Result, error) {
	var out []search.Result
	for i := range corpus {
		p := corpus[(i+len(q.Text))%len(corpus)]
		out = append(out, search.Result{Title: p.title, URL: p.url, Snippet: firstSentence(p.text), Source: "fake"})
	}
	if q.MaxResults > 0 && len(out) > q.MaxResults {
		out = out[:q.MaxResults]
	}
	return out, nil
}

type fakeFetch struct{}

func (fakeFetch) Fetch(_ context.Context, u string) (agent.Page, error) {
	for _, p := range corpus {
		if p.url == u {
			return agent.Page{URL: u, FinalURL: u, Title: p.title, Text: "Menu Home About\n\n" + p.text + "\n\nFooter"}, nil
		}
	}
	return agent.Page{}, fmt.Errorf("404 %s", u)
}

var evidenceRE = regexp.MustCompile(`(?m)^\[E(\d+)\] (.*)\n  quote: "(.*)"\n  source: (.*), (\S+)$`)

// brain scripts the fake LLM.
type brain struct {
	// hangAt, when set, makes the node of that kind hang until the request
	// is cancelled; entered is closed when it first does.
	hangAt  atomic.Value // string
	entered chan struct{}
	once    sync.Once
	calls   sync.Map // kind → *atomic.Int64
	// failFirst, when set, makes the first call of that kind answer 500.
	failFirst  atomic.Value // string
	failedOnce atomic.Bool
}

func nodeKind(n string) string {
	if i := strings.LastIndex(n, "."); strings.HasPrefix(n, "researcher[") && i > 0 {
		return n[i+1:]
	}
	return n
}

func (b *brain) count(kind string) int64 {
	v, _ := b.calls.LoadOrStore(kind, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

func (b *brain) respond(r *llmtest.Request) llmtest.Reply {
	kind := nodeKind(r.Node())
	v, _ := b.calls.LoadOrStore(kind, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	if h, _ := b.hangAt.Load().(string); h != "" && h == kind {
		b.once.Do(func() { close(b.entered) })
		return llmtest.Hang()
	}
	if f, _ := b.failFirst.Load().(string); f == kind && b.failedOnce.CompareAndSwap(false, true) {
		return llmtest.Error(500, "overloaded")
	}
	user := r.LastUser()
	switch kind {
	case "coordinator":
		return llmtest.JSON(map[string]string{"intent": "research", "reply": "", "research_question": "", "clarifying_question": "", "instruction": ""})
	case "planner":
		return llmtest.JSON(map[string]any{"theme": "EU AI Act", "investigation_points": []string{"Timeline", "Penalties"},
			"search_queries": []string{"EU AI Act timeline", "AI Act fines"},
			"subtasks":       []map[string]any{{"title": "Timeline", "queries": []string{"EU AI Act timeline"}}, {"title": "Penalties", "queries": []string{"AI Act fines"}}},
			"plan_text":      "Research the timeline and the penalties.", "evaluation_types": []string{"attribution"}})
	case "supervisor":
		return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": "More detail", "queries": []string{"AI Act enforcement"}}}})
	case "select":
		return llmtest.Call("search", map[string]any{"queries": []string{"AI Act details"}})
	case "execute":
		var fs []map[string]string
		for _, part := range strings.Split(user, "\n=== Page ")[1:] {
			lines := strings.SplitN(part, "\n", 3)
			if len(lines) < 3 {
				continue
			}
			url := strings.TrimPrefix(lines[1], "URL: ")
			s := firstSentence(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[2]), "Menu Home About")))
			fs = append(fs, map[string]string{"claim": "Claim: " + s, "quote": s, "url": url})
		}
		return llmtest.JSON(map[string]any{"summary": fmt.Sprintf("%d pages summarised.", len(fs)), "findings": fs})
	case "answer_subtask":
		return llmtest.Text("The evidence shows the main facts [E1].")
	case "reflect":
		return llmtest.JSON(map[string]any{"is_completed": true, "advice": "", "gaps": []string{}, "next_queries": []string{}})
	case "writer":
		return llmtest.Text(report(user))
	case "reviewer":
		return llmtest.JSON(map[string]any{"scores": agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1},
			"evaluations": []map[string]any{{"type": "attribution", "pass": true, "reason": "cited"}},
			"feedback":    "Fine.", "suggested_action": "write", "issues": []map[string]string{}})
	}
	return llmtest.Error(400, "brain: unexpected node "+r.Node())
}

func report(user string) string {
	ev := evidenceRE.FindAllStringSubmatch(user, -1)
	var sb strings.Builder
	sb.WriteString("# EU AI Act report\n\n## Executive Summary\n\nThe act is in force and its fines are high.\n\n## Key Findings\n\n")
	n := min(len(ev), 4)
	for i := range n {
		fmt.Fprintf(&sb, "- Finding %d: %s [^%d]\n", i+1, ev[i][2], i+1)
	}
	sb.WriteString("\n## Detailed Analysis\n\nSee the findings.\n\n## References\n\n")
	for i := range n {
		fmt.Fprintf(&sb, "[^%d]: \"%s\" — %s, %s\n", i+1, ev[i][3], ev[i][4], ev[i][5])
	}
	return sb.String()
}

type world struct {
	t     *testing.T
	brain *brain
	srv   *llmtest.Server
	store *memsaver.Store
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, brain: &brain{entered: make(chan struct{})}, store: memsaver.New(memsaver.Options{})}
	w.srv = llmtest.NewServer(t, w.brain.respond)
	return w
}

// researcher returns a new agent and adapter over the world's store: a
// "new process" each call.
func (w *world) researcher() (*research.Runner, *agent.Agent) {
	w.t.Helper()
	c, err := llm.New(llm.Options{APIKey: "test", BaseURL: w.srv.URL(), Model: "fake", HTTPClient: w.srv.Client(), Sleep: llm.NoSleep,
		Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		w.t.Fatal(err)
	}
	a, err := agent.New(agent.Deps{LLM: c, Search: fakeSearch{}, Fetch: fakeFetch{}, Saver: w.store, Logger: slog.New(slog.DiscardHandler)},
		agent.Options{MinSources: 2})
	if err != nil {
		w.t.Fatal(err)
	}
	return research.NewRunner(a, research.RunnerOptions{Logger: slog.New(slog.DiscardHandler)}), a
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
