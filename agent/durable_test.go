package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deepresearch/agent"
	"deepresearch/agent/llm"
	"deepresearch/agent/llm/llmtest"
	"deepresearch/tools/sandbox"
)

// TestResumeFromNewProcess pauses for the plan and the draft; each answer
// comes through a new Agent over the same store, as from another process.
func TestResumeFromNewProcess(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res := e.start("hitl", agent.Request{Question: "What does the EU AI Act require?", ApprovePlan: true, ApproveDraft: true})
	if res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 {
		t.Fatalf("%+v", res)
	}
	in := res.Interrupts[0]
	if in.Kind != agent.InterruptApprovePlan || in.Plan == nil || len(in.Plan.Subtasks) != 3 || len(in.Choices) != 3 {
		t.Fatalf("plan interrupt %+v", in)
	}
	if len(e.web.Queries()) != 0 {
		t.Fatal("searched before the plan was approved")
	}
	// Revise the plan once: the planner gets the feedback.
	res, err := e.agent().Resume(ctx, "hitl", map[string]agent.Answer{in.ID: {Action: agent.ActionRevise, Feedback: "Cover SMEs first"}}, nil)
	if err != nil || len(res.Interrupts) != 1 || res.Interrupts[0].Kind != agent.InterruptApprovePlan {
		t.Fatalf("after revise: %v %+v", err, res)
	}
	if !strings.Contains(e.srv.LastRequest().LastUser(), "Cover SMEs first") {
		t.Error("plan feedback not passed to the planner")
	}
	// A second answer to the first interrupt is refused.
	if _, err := e.agent().Resume(ctx, "hitl", map[string]agent.Answer{in.ID: {Action: agent.ActionApprove}}, nil); err == nil {
		t.Error("an answered interrupt was answered again")
	}
	res, err = e.agent().Resume(ctx, "hitl", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusInterrupted || res.Interrupts[0].Kind != agent.InterruptApproveDraft {
		t.Fatalf("want draft approval, got %+v", res)
	}
	d := res.Interrupts[0]
	if !strings.Contains(d.Draft, "## Key Findings") || d.Citations == nil || d.Citations.Verified == 0 || d.Summary == "" || len(d.Choices) != 4 {
		t.Fatalf("draft interrupt %+v", d)
	}
	writes := e.brain.Count("writer")
	res, err = e.agent().Resume(ctx, "hitl", map[string]agent.Answer{d.ID: {Action: agent.ActionRevise, Feedback: "Mention the fines first."}}, nil)
	if err != nil || res.Interrupts[0].Kind != agent.InterruptApproveDraft {
		t.Fatalf("after revise: %v %+v", err, res)
	}
	if e.brain.Count("writer") != writes+1 {
		t.Errorf("writer calls %d → %d", writes, e.brain.Count("writer"))
	}
	res, err = e.agent().Resume(ctx, "hitl", map[string]agent.Answer{"": {Action: agent.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	if res.Finish != agent.FinishPersonOK {
		t.Errorf("finish %s", res.Finish)
	}
	got, err := e.agent().Get(ctx, "hitl")
	if err != nil || got.Report != res.Report {
		t.Errorf("Get: %v", err)
	}
}

func TestCancelAtPlan(t *testing.T) {
	e := newEnv(t)
	e.start("cancel", agent.Request{Question: "What does the EU AI Act require?", ApprovePlan: true})
	res, err := e.agent().Resume(context.Background(), "cancel", map[string]agent.Answer{"": {Action: agent.ActionCancel}}, nil)
	if err != nil || res.Status != agent.StatusCancelled || res.Report != "" {
		t.Fatalf("%v %+v", err, res)
	}
	// the thread takes a new question afterwards
	res = e.start("cancel", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
}

// TestContinueAfterCrash kills a run in the middle of research (the context
// is cancelled from inside a search) and continues it in a new Agent: work
// that finished before the crash is not paid for again.
func TestContinueAfterCrash(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	e.web.OnSearch = researchSearches(func(_ context.Context, n int) error {
		if n == 2 {
			once.Do(cancel)
		}
		return nil
	})
	_, err := e.agent().Start(ctx, "crash", agent.Request{Question: "What does the EU AI Act require?"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	planner, coord := e.brain.Count("planner"), e.brain.Count("coordinator")
	e.web.OnSearch = nil
	res, err := e.agent().Continue(context.Background(), "crash", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	if planner != 1 || e.brain.Count("planner") != 1 || e.brain.Count("coordinator") != coord {
		t.Errorf("coordinator/planner ran again: %d %d", e.brain.Count("coordinator"), e.brain.Count("planner"))
	}
}

func TestTokenBudgetExhaustion(t *testing.T) {
	e := newEnv(t)
	e.opts.TokenBudget = 6500 // enough for planning and a little research
	res := e.start("budget", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone || res.Report == "" {
		t.Fatalf("%+v", res)
	}
	if res.Finish != agent.FinishTokenBudget {
		t.Errorf("finish %s", res.Finish)
	}
	if !strings.Contains(strings.Join(res.Unverified, "\n"), "token budget") || !strings.Contains(res.Report, "## Limitations") {
		t.Errorf("unverified %q", res.Unverified)
	}
	// ordinary calls stayed within budget minus the reserve; only the final
	// report may use the reserve
	if res.Usage.Total() > 6500+2000 {
		t.Errorf("used %d tokens", res.Usage.Total())
	}
}

// A budget too small for the writer's call ends in a report quoting the
// sources, which says the budget ran out, not that the model was
// unavailable, and the run's progress says the same.
func TestTokenBudgetTooSmallForTheWriter(t *testing.T) {
	for _, budget := range []int{1500, 2250} {
		e := newEnv(t)
		e.opts.TokenBudget = budget
		res := e.start("small-budget", agent.Request{Question: "What does the EU AI Act require?"})
		if res.Status != agent.StatusDone || !res.Extractive {
			t.Fatalf("budget %d: status %s, extractive %v", budget, res.Status, res.Extractive)
		}
		if res.Finish != agent.FinishTokenBudget {
			t.Errorf("budget %d: finish %s, want %s", budget, res.Finish, agent.FinishTokenBudget)
		}
		if strings.Contains(res.Report, "language model was unavailable") || !strings.Contains(res.Report, "token budget ran out") {
			t.Errorf("budget %d: the report does not say the budget ran out:\n%s", budget, res.Report)
		}
		if e.kinds()[agent.EventBudget] == 0 {
			t.Errorf("budget %d: no budget event: %v", budget, e.kinds())
		}
		for _, ev := range e.events {
			if ev.Kind == agent.EventWarning && strings.Contains(ev.Message, "writer is unavailable") {
				t.Errorf("budget %d: progress says %q", budget, ev.Message)
			}
		}
	}
}

func TestTimeBudget(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	e.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute) // every look at the clock costs a minute
		return now
	}
	e.opts.TimeBudget = 5 * time.Minute
	res := e.start("time", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone || res.Report == "" || res.Finish != agent.FinishTimeBudget {
		t.Fatalf("status %s finish %s", res.Status, res.Finish)
	}
	if !strings.Contains(strings.Join(res.Unverified, "\n"), "time budget") {
		t.Errorf("unverified %q", res.Unverified)
	}
}

// TestLLMFaults runs full researches against a server that fails 30% of
// calls with 429s, 500s, hangs and malformed bodies: retries and fallbacks
// must still finish with a cited report.
func TestLLMFaults(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		for _, q := range []string{"What does the EU AI Act require?", "2026年の国内生成AI規制の動向を調べて"} {
			e := newEnv(t, llmtest.WithFaults(llmtest.Faults{Rate: 0.3, Seed: seed, RetryAfter: time.Millisecond}))
			e.client = e.newClient(func(o *llm.Options) { o.Timeout = 300 * time.Millisecond; o.MaxRetries = 4 })
			e.brain.BadJSON = 4 // and every 4th structured reply is broken JSON
			res := e.start("faults", agent.Request{Question: q})
			if res.Status != agent.StatusDone || res.Report == "" || !strings.Contains(res.Report, "## References") {
				t.Fatalf("seed %d: status %s finish %s\n%s", seed, res.Status, res.Finish, res.Report)
			}
			if res.Citations.Verified == 0 {
				t.Errorf("seed %d: no verified citation", seed)
			}
			if e.brain.JSONCalls() < 4 {
				t.Errorf("seed %d: no broken JSON was sent", seed)
			}
			f := e.srv.Faulted()
			if f[llmtest.Fault429]+f[llmtest.Fault500]+f[llmtest.FaultHang]+f[llmtest.FaultMalformed] == 0 {
				t.Errorf("seed %d: no faults injected", seed)
			}
		}
	}
}

type fakeCoder struct{ codes []string }

func (c *fakeCoder) Run(_ context.Context, code string) (sandbox.Result, error) {
	c.codes = append(c.codes, code)
	return sandbox.Result{Output: "7% of 1e9 = 70000000"}, nil
}

func TestCodingAndVisitActions(t *testing.T) {
	e := newEnv(t)
	coder := &fakeCoder{}
	e.coder = coder
	e.opts.MaxSubtasks, e.opts.MaxURLs, e.opts.MinSources = 1, 1, 1
	e.brain.ReflectDone = func(try int) bool { return try >= 2 }
	var visited atomic.Value // the page the select step asked to visit
	e.brain.SelectTools = func(r *llmtest.Request) llmtest.Reply {
		var visit string
		for _, ln := range strings.Split(r.LastUser(), "\n") {
			if strings.HasPrefix(ln, "[1] ") {
				visit = ln[strings.LastIndex(ln, " ")+1:]
			}
		}
		visited.Store(visit)
		calls := []llmtest.ToolCall{{ID: "c1", Name: "coding", Args: map[string]string{"task": "max fine for 1bn turnover", "code": "console.log(0.07*1e9)"}}}
		if visit != "" {
			calls = append(calls, llmtest.ToolCall{ID: "c2", Name: "visit", Args: map[string]any{"urls": []string{visit}}})
		}
		return llmtest.Calls(calls...)
	}
	res := e.start("code", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	if len(coder.codes) != 1 {
		t.Fatalf("coder ran %d times", len(coder.codes))
	}
	var offered []string
	for _, r := range e.srv.Requests() {
		if strings.HasSuffix(r.Node(), ".select") {
			offered = r.ToolNames()
		}
	}
	if strings.Join(offered, ",") != "search,visit,coding,answer" {
		t.Errorf("tools offered: %v", offered)
	}
	visit, _ := visited.Load().(string)
	if visit == "" || !slices.ContainsFunc(res.Sources, func(s agent.SourceRef) bool { return s.URL == visit && s.Retrieved }) {
		t.Errorf("the visit did not read %q: sources %+v", visit, res.Sources)
	}
	var sawComp bool
	for _, r := range e.srv.Requests() {
		if strings.HasSuffix(r.Node(), ".answer_subtask") && strings.Contains(r.LastUser(), "70000000") {
			sawComp = true
		}
	}
	if !sawComp {
		t.Error("the computation did not reach the subtask answer")
	}
}
