package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm"
)

// inflight counts concurrent calls per key and remembers the highest.
type inflight struct {
	mu       sync.Mutex
	now, top map[string]int
}

func newInflight() *inflight { return &inflight{now: map[string]int{}, top: map[string]int{}} }

func (f *inflight) enter(k string) func() {
	f.mu.Lock()
	f.now[k]++
	f.top[k] = max(f.top[k], f.now[k])
	f.mu.Unlock()
	// hold the slot a moment so that calls that may overlap do
	time.Sleep(5 * time.Millisecond)
	return func() {
		f.mu.Lock()
		f.now[k]--
		f.mu.Unlock()
	}
}

func (f *inflight) max(k string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.top[k]
}

type countingLLM struct {
	agent.LLM
	f *inflight
}

func (c countingLLM) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	defer c.f.enter("llm")()
	return c.LLM.Chat(ctx, req)
}

func (c countingLLM) ChatJSON(ctx context.Context, req llm.Request, s *llm.Schema, out any) (llm.Response, error) {
	defer c.f.enter("llm")()
	return c.LLM.ChatJSON(ctx, req, s, out)
}

type countingFetch struct {
	*agenttest.World
	f *inflight
}

func (c *countingFetch) Fetch(ctx context.Context, u string) (agent.Page, error) {
	host := u
	if p, err := url.Parse(u); err == nil {
		host = p.Host
	}
	defer c.f.enter(host)()
	return c.World.Fetch(ctx, u)
}

// Model calls and page fetches run concurrently, but never more at once
// than the run's limits allow.
func TestConcurrencyLimits(t *testing.T) {
	for _, tc := range []struct {
		name             string
		model, hostFetch int
		wantParallel     bool
	}{
		{"defaults", 0, 0, true},
		{"one at a time", 1, 1, false},
		{"two", 2, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := newInflight()
			e.opts.RunModelCalls, e.opts.HostFetches = tc.model, tc.hostFetch
			a, err := agent.New(agent.Deps{LLM: countingLLM{e.client, f}, Search: e.web, Fetch: &countingFetch{World: e.web, f: f},
				Saver: e.store, Notes: e.notes, Logger: slog.New(slog.DiscardHandler)}, e.opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Start(context.Background(), "lim", agent.Request{Question: "What does the EU AI Act require?"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, res)
			model := f.max("llm")
			if tc.model > 0 && model > tc.model {
				t.Errorf("%d model calls at once, limit %d", model, tc.model)
			}
			if got := model > 1; got != tc.wantParallel {
				t.Errorf("model calls in parallel = %v (max %d), want %v", got, model, tc.wantParallel)
			}
			limit := tc.hostFetch
			if limit == 0 {
				limit = agent.DefaultHostFetches
			}
			for _, h := range []string{"news.example", "law.example", "blog.example", "gov.example", "think.example", "stats.example"} {
				if n := f.max(h); n > limit {
					t.Errorf("%d fetches at once from %s, limit %d", n, h, limit)
				}
			}
		})
	}
}

// barrierLLM holds every answer_subtask call until a reflect call of the
// same researcher has started: it only returns if the two run at once.
type barrierLLM struct {
	agent.LLM
	mu       sync.Mutex
	reflects map[string]chan struct{}
	timeouts int
}

func (b *barrierLLM) ch(node string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := node[:len(node)-len(agenttest.Kind(node))]
	c, ok := b.reflects[k]
	if !ok {
		c = make(chan struct{})
		b.reflects[k] = c
	}
	return c
}

func (b *barrierLLM) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if n := llm.NodeFrom(ctx); agenttest.Kind(n) == "answer_subtask" {
		select {
		case <-b.ch(n):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		case <-time.After(10 * time.Second):
			b.mu.Lock()
			b.timeouts++
			b.mu.Unlock()
			return llm.Response{}, errors.New("barrier: no reflection started while answering")
		}
	}
	return b.LLM.Chat(ctx, req)
}

func (b *barrierLLM) ChatJSON(ctx context.Context, req llm.Request, s *llm.Schema, out any) (llm.Response, error) {
	if n := llm.NodeFrom(ctx); agenttest.Kind(n) == "reflect" {
		c := b.ch(n)
		b.mu.Lock()
		select {
		case <-c:
		default:
			close(c)
		}
		b.mu.Unlock()
	}
	return b.LLM.ChatJSON(ctx, req, s, out)
}

// The subtask answer and the reflection do not depend on each other and
// run at the same time; the answer of the last try is the model's.
func TestAnswerAndReflectionOverlap(t *testing.T) {
	e := newEnv(t)
	bl := &barrierLLM{LLM: e.client, reflects: map[string]chan struct{}{}}
	a, err := agent.New(agent.Deps{LLM: bl, Search: e.web, Fetch: e.web, Saver: e.store, Notes: e.notes, Logger: slog.New(slog.DiscardHandler)}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Start(context.Background(), "overlap", agent.Request{Question: "What does the EU AI Act require?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	if n := e.brain.Count("answer_subtask"); n == 0 {
		t.Fatal("no subtask answer was asked for")
	}
	if bl.timeouts != 0 {
		t.Errorf("%d answers waited in vain for their reflection", bl.timeouts)
	}
	if res.Usage.Failures != 0 {
		t.Errorf("%d failed calls", res.Usage.Failures)
	}
}

// A first message that is plainly a research question goes straight to the
// planner; anything else (small talk, a follow-up, a vague word) is the
// coordinator's to decide.
func TestPlainQuestionSkipsCoordinator(t *testing.T) {
	for _, tc := range []struct {
		q     string
		coord int
	}{
		{"What does the EU AI Act require?", 0},
		{"2026年の国内生成AI規制の動向を調べて", 0},
		{"regulation?", 1},
		{"What can you research for me today?", 1},
	} {
		t.Run(tc.q, func(t *testing.T) {
			e := newEnv(t)
			res := e.start("plain", agent.Request{Question: tc.q})
			if n := e.brain.Count("coordinator"); n != tc.coord {
				t.Errorf("coordinator called %d times, want %d", n, tc.coord)
			}
			if res.Status != agent.StatusDone {
				t.Errorf("status %s", res.Status)
			}
		})
	}
}

// The process-wide cap holds across runs of one Agent.
func TestProcessModelCallLimit(t *testing.T) {
	e := newEnv(t)
	f := newInflight()
	e.opts.ProcessModelCalls = 2
	a, err := agent.New(agent.Deps{LLM: countingLLM{e.client, f}, Search: e.web, Fetch: e.web,
		Saver: e.store, Notes: e.notes, Logger: slog.New(slog.DiscardHandler)}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, q := range []string{"What does the EU AI Act require?", "2026年の国内生成AI規制の動向を調べて", "How are AI Act fines calculated?"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.Start(context.Background(), "p-"+q, agent.Request{Question: q}, nil)
			if err != nil || res.Status != agent.StatusDone {
				t.Errorf("%s: %v %+v", q, err, res)
			}
		}()
	}
	wg.Wait()
	if n := f.max("llm"); n > 2 || n < 2 {
		t.Errorf("%d model calls at once across runs, want exactly the cap of 2", n)
	}
}

// A try that finds nothing new is not reflected on again: the verdict on
// the same evidence stands. The last try still gets its answer.
func TestNothingNewNoSecondReflection(t *testing.T) {
	e := newEnv(t)
	e.brain.ReflectDone = func(int) bool { return false }
	e.web.Empty = func(q string) bool { // the reflection's and the select step's queries
		return strings.Contains(q, "numbers") || strings.Contains(q, "details")
	}
	res := e.start("same", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	subtasks := len(res.Plan.Subtasks)
	if n := e.brain.Count("reflect"); n != subtasks {
		t.Errorf("%d reflections for %d subtasks whose later tries found nothing new", n, subtasks)
	}
	if n := e.brain.Count("select"); n != subtasks {
		t.Errorf("%d select calls, want %d (try 3 of each subtask; try 2 searched the reflection's queries)", n, subtasks)
	}
	// the last try answers from the evidence (try 1's answer was called off)
	last := 0
	for _, r := range e.srv.Requests() {
		if agenttest.Kind(r.Node()) == "answer_subtask" {
			last++
		}
	}
	if last < subtasks {
		t.Errorf("%d subtask answers asked for, want at least %d", last, subtasks)
	}
}

// A reflection that names the next queries has chosen the next try's
// searches, as the planner chose the first try's: without a coder (the one
// action only the select step can choose) no select call is made, and the
// next try searches those queries.
func TestReflectionQueriesNeedNoSelect(t *testing.T) {
	e := newEnv(t)
	e.brain.ReflectDone = func(try int) bool { return try >= 2 }
	res := e.start("next", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	subtasks := len(res.Plan.Subtasks)
	for _, r := range e.srv.Requests() {
		// a later try may ask, when the reflection's queries were searched already
		if agenttest.Kind(r.Node()) == "select" && strings.Contains(r.System()+r.LastUser(), "Attempt 2 of") {
			t.Errorf("%s asked the model for the second try's actions; the reflection named them", r.Node())
		}
	}
	n := 0
	for _, q := range e.web.Queries() {
		if q == "numbers 1" {
			n++
		}
	}
	if n != subtasks {
		t.Errorf("the first reflection's query was searched %d times, want once per subtask (%d)", n, subtasks)
	}
}

// A later try whose query leads back to pages its researcher has read asks
// the search for more results, so it still finds pages to read. Here the
// reflection's query ranks first the pages one subtask read in its first
// try; looking past them, every subtask ends after its second try and no
// select call is needed to find another query.
func TestLaterTryLooksPastPagesRead(t *testing.T) {
	e := newEnv(t)
	e.brain.ReflectDone = func(try int) bool { return try >= 2 }
	res := e.start("past", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	if n := e.brain.Count("select"); n != 0 {
		t.Errorf("%d select calls, want none", n)
	}
	finished := 0
	for _, ev := range e.events {
		if ev.Kind == agent.EventSubtaskFinished {
			finished++
			if ev.Subtask.Tries != 2 || !ev.Subtask.Completed {
				t.Errorf("subtask %q ended after %d tries (completed %v), want 2", ev.Subtask.Title, ev.Subtask.Tries, ev.Subtask.Completed)
			}
		}
	}
	if finished != len(res.Plan.Subtasks) {
		t.Errorf("%d subtasks finished, want %d", finished, len(res.Plan.Subtasks))
	}
}

// The researchers of one run whose searches find the same pages read each
// page once: a page another researcher has read, or is reading, is shared.
func TestRunReadsEachPageOnce(t *testing.T) {
	e := newEnv(t)
	res := e.start("pages", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	pages := len(agenttest.EnglishPages())
	if n := e.web.Fetches(); n > pages {
		t.Errorf("%d pages fetched; the web has %d", n, pages)
	}
	read := 0
	for _, src := range res.Sources {
		if src.Retrieved {
			read++
		}
	}
	if read < len(res.Plan.Subtasks) {
		t.Errorf("%d sources read", read)
	}
}

// heldFetcher reads the World's pages, except that a fetch of hold waits
// for its context; ended is closed when that fetch has returned.
type heldFetcher struct {
	*agenttest.World
	hold  string
	ended chan struct{}
	once  sync.Once

	mu   sync.Mutex
	read map[string]bool
}

func (f *heldFetcher) Fetch(ctx context.Context, u string) (agent.Page, error) {
	f.mu.Lock()
	f.read[u] = true
	f.mu.Unlock()
	if u == f.hold {
		<-ctx.Done()
		f.once.Do(func() { close(f.ended) })
		return agent.Page{}, ctx.Err()
	}
	return f.World.Fetch(ctx, u)
}

func (f *heldFetcher) fetched(u string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read[u]
}

// While the plan is made, a run reads ahead the pages the question itself
// finds. A page no researcher's search leads to is read but does not enter
// the research; a read still under way when the run ends is called off with
// it, before Start returns. A question about the team's own matters is not
// read ahead: the web does not know them.
func TestReadAheadOfThePlan(t *testing.T) {
	const q, internal = "What does the EU AI Act require?", "What did we decide about the EU AI Act?"
	aside := agenttest.Page{URL: "https://aside.example/question", Title: "Aside", Text: "A page only the question finds. It says little more."}
	held := agenttest.Page{URL: "https://held.example/question", Title: "Held", Text: "A page that takes longer than the run. It is never read."}
	e := newEnv(t)
	e.web = agenttest.NewWorld(append(agenttest.EnglishPages(), aside, held)...)
	e.web.Find = func(query string) []agenttest.Page {
		if query == q || query == internal {
			return []agenttest.Page{aside, held}
		}
		return agenttest.EnglishPages()
	}
	f := &heldFetcher{World: e.web, hold: held.URL, ended: make(chan struct{}), read: map[string]bool{}}
	a, err := agent.New(agent.Deps{LLM: e.client, Search: e.web, Fetch: f, Saver: e.store, Logger: slog.New(slog.DiscardHandler)}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Start(testCtx(t), "ahead", agent.Request{Question: q}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	select {
	case <-f.ended:
	default:
		t.Error("a page read ahead was still being read after Start returned")
	}
	if !f.fetched(aside.URL) {
		t.Error("the page the question finds was not read ahead")
	}
	for _, src := range res.Sources {
		if src.URL == aside.URL || src.URL == held.URL {
			t.Errorf("%s, read ahead only, entered the research", src.URL)
		}
	}

	res, err = a.Start(testCtx(t), "internal", agent.Request{Question: internal}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	if slices.Contains(e.web.Queries(), internal) {
		t.Error("a question about the team's own matters was searched on the web as asked")
	}
}
