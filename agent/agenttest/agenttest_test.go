package agenttest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/graph/memsaver"
	"deepresearch/tools/search"
)

func TestWorldSearch(t *testing.T) {
	w := agenttest.NewWorld()
	w.Empty = func(q string) bool { return q == "nothing here at all" }
	ctx := context.Background()
	for _, tc := range []struct {
		query  string
		max    int
		want   int
		prefix string // every result's URL
	}{
		{"EU AI Act timeline", 0, 6, "https://"},
		{"EU AI Act fines", 3, 3, "https://"},
		{"AI推進法 成立", 0, 5, "https://jp.example/"},
		{"nothing here at all", 0, 0, ""},
	} {
		rs, err := w.Search(ctx, search.Query{Text: tc.query, MaxResults: tc.max})
		if err != nil || len(rs) != tc.want {
			t.Fatalf("%q: %d results, %v; want %d", tc.query, len(rs), err, tc.want)
		}
		for _, r := range rs {
			if !strings.HasPrefix(r.URL, tc.prefix) || r.Title == "" || r.Snippet == "" {
				t.Errorf("%q: result %+v", tc.query, r)
			}
			if strings.HasPrefix(r.URL, "https://jp.example/") != strings.HasPrefix(tc.prefix, "https://jp.") {
				t.Errorf("%q: a page in the other language: %s", tc.query, r.URL)
			}
		}
	}
	a, _ := w.Search(ctx, search.Query{Text: "abc"})
	b, _ := w.Search(ctx, search.Query{Text: "abcd"})
	if a[0].URL == b[0].URL {
		t.Error("queries of different lengths lead with the same page")
	}
	if got := w.Queries(); len(got) != 6 || got[0] != "EU AI Act timeline" || w.Searches() != 6 {
		t.Errorf("queries %q, %d searches", got, w.Searches())
	}
	// a world of English pages only answers every language
	en := agenttest.NewWorld(agenttest.EnglishPages()...)
	if rs, _ := en.Search(ctx, search.Query{Text: "AI推進法"}); len(rs) != 6 {
		t.Errorf("English world, Japanese query: %d results", len(rs))
	}
}

// Find picks the pages, in order, even pages the world does not hold.
func TestWorldFind(t *testing.T) {
	own := agenttest.Page{URL: "https://own.example/page", Title: "Own page", Text: "Served by the test. Not by the world."}
	w := agenttest.NewWorld()
	w.Find = func(q string) []agenttest.Page {
		if q == "AI推進法" {
			return nil
		}
		return []agenttest.Page{own, agenttest.JapanesePages()[0]}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		query string
		max   int
		want  []string // the URLs
	}{
		{"EU AI Act", 0, []string{own.URL, "https://jp.example/ai-law"}},
		{"EU AI Act fines", 1, []string{own.URL}},
		{"AI推進法", 0, nil},
	} {
		rs, err := w.Search(ctx, search.Query{Text: tc.query, MaxResults: tc.max})
		var got []string
		for _, r := range rs {
			got = append(got, r.URL)
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.query, got, err, tc.want)
		}
	}
	if rs, _ := w.Search(ctx, search.Query{Text: "x"}); len(rs) == 0 || rs[0].Title != "Own page" || rs[0].Snippet != "Served by the test." {
		t.Errorf("result of a found page: %+v", rs)
	}
}

func TestWorldOnSearchAndBarrier(t *testing.T) {
	w := agenttest.NewWorld()
	boom := errors.New("boom")
	w.OnSearch = func(_ context.Context, n int) error {
		if n == 2 {
			return boom
		}
		return nil
	}
	ctx := context.Background()
	if _, err := w.Search(ctx, search.Query{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Search(ctx, search.Query{Text: "two"}); !errors.Is(err, boom) {
		t.Fatalf("second search: %v", err)
	}
	w = agenttest.NewWorld()
	w.Barrier = 3
	// two searches wait for a third
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := w.Search(short, search.Query{Text: "alone"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a search alone at the barrier: %v", err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := w.Search(ctx, search.Query{Text: "together"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait() // the barrier of 3 counted the one that gave up
}

func TestWorldFetch(t *testing.T) {
	w := agenttest.NewWorld()
	p, err := w.Fetch(context.Background(), "https://law.example/penalties")
	if err != nil || p.Title != "AI Act penalties" || !strings.Contains(p.Text, "35 million euros") || !strings.HasPrefix(p.Text, "Menu") {
		t.Fatalf("%v %+v", err, p)
	}
	if _, err := w.Fetch(context.Background(), "https://law.example/missing"); err == nil {
		t.Error("an unknown page was read")
	}
	if w.Fetches() != 2 {
		t.Errorf("%d fetches", w.Fetches())
	}
}

// The handlers serve the world to the real search client and to anything
// that reads pages over HTTP.
func TestWorldHandlers(t *testing.T) {
	w := agenttest.NewWorld(agenttest.EnglishPages()...)
	web := httptest.NewServer(w.WebHandler())
	defer web.Close()
	sx := httptest.NewServer(w.SearXNGHandler(web.URL))
	defer sx.Close()
	client, err := search.NewSearXNG(search.SearXNGOptions{BaseURL: sx.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := client.Search(context.Background(), search.Query{Text: "EU AI Act fines", MaxResults: 10})
	if err != nil || len(rs) != 6 {
		t.Fatalf("%d results, %v", len(rs), err)
	}
	found := false
	for _, r := range rs {
		if !strings.HasPrefix(r.URL, web.URL+"/") {
			t.Errorf("result %s is not on the web server", r.URL)
		}
		if r.Title != "AI Act penalties" {
			continue
		}
		found = true
		resp, err := http.Get(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "<title>AI Act penalties</title>") || !strings.Contains(string(body), "35 million euros") {
			t.Errorf("page %d:\n%s", resp.StatusCode, body)
		}
	}
	if !found {
		t.Error("no result for the penalties page")
	}
	if resp, err := http.Get(web.URL + "/missing"); err != nil || resp.StatusCode != 404 {
		t.Errorf("missing page: %v %v", err, resp.Status)
	}
}

func TestKindAndEvidence(t *testing.T) {
	for node, want := range map[string]string{
		"planner": "planner", "researcher[1.2].select": "select", "researcher[2.1].answer_subtask": "answer_subtask", "x.y": "x.y",
	} {
		if got := agenttest.Kind(node); got != want {
			t.Errorf("Kind(%q) = %q, want %q", node, got, want)
		}
	}
	prompt := "Evidence:\n[E1] Claim: fines are high\n  quote: \"Fines can reach 35 million euros.\"\n  source: AI Act penalties, https://law.example/penalties\n" +
		"[E2] Claim: x\n  quote: \"y\"\n  source: T, https://a.example/\n"
	ev := agenttest.ParseEvidence(prompt)
	want := []agenttest.Evidence{
		{N: 1, Claim: "Claim: fines are high", Quote: "Fines can reach 35 million euros.", Title: "AI Act penalties", URL: "https://law.example/penalties"},
		{N: 2, Claim: "Claim: x", Quote: "y", Title: "T", URL: "https://a.example/"},
	}
	if len(ev) != len(want) || ev[0] != want[0] || ev[1] != want[1] {
		t.Errorf("ParseEvidence = %+v", ev)
	}
}

type run struct {
	srv   *llmtest.Server
	brain *agenttest.Brain
	web   *agenttest.World
	a     *agent.Agent
}

func newRun(t *testing.T, brain *agenttest.Brain) *run {
	r := &run{brain: brain, web: agenttest.NewWorld()}
	r.srv = llmtest.NewServer(t, brain.Respond)
	a, err := agent.New(agent.Deps{LLM: agenttest.Client(t, r.srv, nil), Search: r.web, Fetch: r.web,
		Saver: memsaver.New(memsaver.Options{}), Logger: slog.New(slog.DiscardHandler)}, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	return r
}

// The default script researches a question to a cited, approved report, in
// English and in Japanese.
func TestBrainResearches(t *testing.T) {
	for _, q := range []string{"What does the EU AI Act require?", "2026年の国内生成AI規制の動向を調べて"} {
		r := newRun(t, agenttest.NewBrain())
		res, err := r.a.Start(context.Background(), "t", agent.Request{Question: q}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != agent.StatusDone || res.Finish != agent.FinishApproved || res.Citations.Verified == 0 {
			t.Errorf("%s: %s %s, %d verified\n%s", q, res.Status, res.Finish, res.Citations.Verified, res.Report)
		}
		if r.brain.Count("planner") != 1 || r.brain.Count("writer") != 1 || r.brain.Count("reviewer") != 1 || r.brain.Count("execute") == 0 {
			t.Errorf("%s: calls planner %d writer %d reviewer %d execute %d", q, r.brain.Count("planner"),
				r.brain.Count("writer"), r.brain.Count("reviewer"), r.brain.Count("execute"))
		}
		if r.brain.Total() != r.srv.Calls() || len(r.brain.WriterPrompts()) != 1 || !strings.Contains(r.brain.LastReport(), "## References") {
			t.Errorf("%s: total %d of %d calls, %d writer prompts", q, r.brain.Total(), r.srv.Calls(), len(r.brain.WriterPrompts()))
		}
		if r.web.Searches() == 0 || r.web.Fetches() == 0 {
			t.Errorf("%s: %d searches, %d fetches", q, r.web.Searches(), r.web.Fetches())
		}
	}
}

func TestBrainKnobs(t *testing.T) {
	q := agent.Request{Question: "What does the EU AI Act require?"}
	t.Run("writer, reviewer and wrap", func(t *testing.T) {
		b := agenttest.NewBrain()
		b.Writer = func(prompt string, _ bool) string {
			ev := agenttest.ParseEvidence(prompt)
			return "# Mine\n\n## Executive Summary\n\nShort.\n\n## Key Findings\n\n- " + ev[0].Claim + " [^1]\n\n## References\n\n[^1]: \"" +
				ev[0].Quote + "\" — " + ev[0].Title + ", " + ev[0].URL + "\n"
		}
		b.ReviewScores = func(int) (agent.Scores, string) {
			return agent.Scores{FactCheck: 1, Completeness: 1, Logic: 1, Format: 1}, "end"
		}
		wrapped := 0
		b.Wrap = func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
			wrapped++ // the server calls its responder one at a time
			return scripted
		}
		r := newRun(t, b)
		res, err := r.a.Start(context.Background(), "t", q, nil)
		if err != nil || !strings.HasPrefix(res.Report, "# Mine") || res.Citations.Verified != 1 {
			t.Fatalf("%v %+v", err, res)
		}
		if wrapped != r.srv.Calls() {
			t.Errorf("Wrap saw %d of %d calls", wrapped, r.srv.Calls())
		}
	})
	t.Run("fail next", func(t *testing.T) {
		b := agenttest.NewBrain()
		b.FailNext("planner")
		r := newRun(t, b)
		res, err := r.a.Start(context.Background(), "t", q, nil)
		if err != nil || res.Status != agent.StatusDone || res.Plan == nil || res.Plan.Fallback {
			t.Fatalf("%v %+v", err, res)
		}
		if n := b.Count("planner"); n != 2 {
			t.Errorf("planner called %d times, want a failure and a retry", n)
		}
	})
	t.Run("hang", func(t *testing.T) {
		b := agenttest.NewBrain()
		entered := b.HangAt("writer")
		r := newRun(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-entered
			cancel()
		}()
		if _, err := r.a.Start(ctx, "t", q, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start = %v, want it cancelled in the writer", err)
		}
		b.HangAt("")
		res, err := r.a.Continue(context.Background(), "t", nil)
		if err != nil || res.Status != agent.StatusDone {
			t.Fatalf("Continue: %v %+v", err, res)
		}
	})
	t.Run("inject", func(t *testing.T) {
		const inject = "<!channel> <@U123>"
		b := agenttest.NewBrain()
		b.Inject = inject
		r := newRun(t, b)
		res, err := r.a.Start(context.Background(), "t", q, nil)
		if err != nil || res.Status != agent.StatusDone || res.Citations.Verified == 0 {
			t.Fatalf("%v %+v", err, res)
		}
		if res.Plan == nil || !strings.HasSuffix(res.Plan.Theme, " "+inject) || !strings.HasSuffix(res.Plan.Subtasks[0].Title, " "+inject) {
			t.Errorf("plan %+v", res.Plan)
		}
		// The report the agent hands out has Slack's syntax broken
		// (agent/links): the text is there, inert.
		shown := strings.ReplaceAll(inject, "<", "<\u2060")
		if !strings.HasPrefix(res.Report, "# Report "+shown+"\n") || !strings.Contains(res.Report, "about the question. "+shown+"\n") {
			t.Errorf("report:\n%s", res.Report)
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		b := agenttest.NewBrain()
		b.BadJSON = 3
		r := newRun(t, b)
		res, err := r.a.Start(context.Background(), "t", q, nil)
		if err != nil || res.Status != agent.StatusDone {
			t.Fatalf("%v %+v", err, res)
		}
		if b.JSONCalls() < 3 {
			t.Errorf("%d structured calls: none broken", b.JSONCalls())
		}
	})
}
