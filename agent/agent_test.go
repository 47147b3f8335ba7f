package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"

	"deepresearch/agent"
	"deepresearch/agent/citation"
	"deepresearch/agent/llm/llmtest"
)

// asked reports whether some request to node had every one of texts in its
// last user message.
func (e *env) asked(node string, texts ...string) bool {
	for _, r := range e.srv.Requests() {
		if r.Node() == node && containsAll(r.LastUser(), texts) {
			return true
		}
	}
	return false
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func checkReport(t *testing.T, res *agent.Result) {
	t.Helper()
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s, interrupts %+v", res.Status, res.Interrupts)
	}
	for _, h := range []string{"## Executive Summary", "## Key Findings", "## Detailed Analysis", "## References", "[^1]: "} {
		if !strings.Contains(res.Report, h) {
			t.Errorf("report lacks %q:\n%s", h, res.Report)
		}
	}
	if res.Citations.Verified == 0 || res.Citations.Verified+res.Citations.Dropped != res.Citations.Cited {
		t.Errorf("citations %+v", res.Citations)
	}
	if res.Usage.Total() == 0 || res.Usage.Calls == 0 {
		t.Errorf("usage %+v", res.Usage)
	}
	cited := 0
	for _, s := range res.Sources {
		if s.Cited {
			cited++
		}
	}
	if cited == 0 {
		t.Errorf("no source marked cited: %+v", res.Sources)
	}
	if res.Summary == "" {
		t.Error("no summary")
	}
}

func TestFullRunEnglish(t *testing.T) {
	e := newEnv(t)
	e.web.OnSearch = researchBarrier(3) // the three researchers must search at the same time
	res := e.start("en-1", agent.Request{Question: "What does the EU AI Act require, and when?"})
	checkReport(t, res)
	if res.Finish != agent.FinishApproved || res.Language != "en" {
		t.Errorf("finish %s language %s", res.Finish, res.Language)
	}
	if res.Citations.Dropped != 0 || len(res.Unverified) != 0 {
		t.Errorf("citations %+v unverified %v\n%s", res.Citations, res.Unverified, res.Report)
	}
	if res.Plan == nil || len(res.Plan.Subtasks) != 3 || res.Plan.Fallback {
		t.Fatalf("plan %+v", res.Plan)
	}
	k := e.kinds()
	for kind, min := range map[agent.EventKind]int{agent.EventPlanMade: 1, agent.EventSubtaskStarted: 3, agent.EventSubtaskFinished: 3,
		agent.EventSourceRead: 3, agent.EventSourceFound: 3, agent.EventTokens: 8, agent.EventPhase: 5, agent.EventNoteSaved: 3, agent.EventDraft: 1, agent.EventReviewed: 1} {
		if k[kind] < min {
			t.Errorf("%d %s events, want ≥ %d (all: %v)", k[kind], kind, min, k)
		}
	}
	notes := e.notes.Notes("en-1")
	if len(notes) < 3 {
		t.Fatalf("notes: %+v", notes)
	}
	for _, n := range notes {
		if n.Query == "" || n.Summary == "" || len(n.Sources) == 0 {
			t.Errorf("incomplete note %+v", n)
		}
	}
	// the report is the writer's, renumbered from [^11].. to [^1]..
	if strings.Contains(res.Report, "[^11]") || !strings.Contains(res.Report, "[^2]") {
		t.Errorf("not renumbered:\n%s", res.Report)
	}
	// researchers saw no URL twice within a subtask, and no query ran twice
	qs := e.web.Queries()
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[strings.ToLower(q)] {
			t.Errorf("query %q ran twice", q)
		}
		seen[strings.ToLower(q)] = true
	}
}

func hasKana(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Hiragana, unicode.Katakana) {
			return true
		}
	}
	return false
}

func TestFullRunJapanese(t *testing.T) {
	e := newEnv(t)
	res := e.start("ja-1", agent.Request{Question: "2026年の国内生成AI規制の動向を調べて"})
	checkReport(t, res)
	if res.Language != "ja" || !hasKana(res.Summary) {
		t.Errorf("language %s summary %q", res.Language, res.Summary)
	}
	if !strings.Contains(res.Report, "本法には罰則規定は設けられていない。") && !strings.Contains(res.Report, "2025年5月、AI推進法が国会で成立した。") {
		t.Errorf("no Japanese quote in the report:\n%s", res.Report)
	}
	// the writer was told to write in Japanese
	for _, r := range e.srv.Requests() {
		if r.Node() == "writer" && !strings.Contains(r.System(), "in Japanese") {
			t.Error("writer prompt does not ask for Japanese")
		}
	}
}

func TestCitationsCatchFabrications(t *testing.T) {
	e := newEnv(t)
	e.brain.ExtraFootnotes = []string{
		`"The AI Act bans all chatbots." — Fabricated News, https://fabricated.example/chatbots`,
		`"The EU AI Act entered into force on 1 January 2020." — AI Act timeline, https://news.example/ai-act-timeline`,
	}
	e.opts.MaxReviews = 1
	res := e.start("cite-1", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	if res.Citations.Dropped != 2 {
		t.Fatalf("citations %+v", res.Citations)
	}
	st := map[citation.Status]int{}
	for _, f := range res.Citations.Footnotes {
		st[f.Status]++
	}
	if st[citation.NotRetrieved] != 1 || st[citation.QuoteNotFound] != 1 {
		t.Errorf("statuses %v", st)
	}
	body, _, _ := strings.Cut(res.Report, "## Limitations")
	refs := res.Report[strings.LastIndex(res.Report, "## References"):]
	for _, s := range []string{"fabricated.example", "1 January 2020", "[^x"} {
		if strings.Contains(body, s) || strings.Contains(refs, s) {
			t.Errorf("report still has %q", s)
		}
	}
	if len(res.Unverified) < 2 || !strings.Contains(strings.Join(res.Unverified, "\n"), "fabricated.example") {
		t.Errorf("unverified %q", res.Unverified)
	}
	if !strings.Contains(res.Report, "## Limitations") {
		t.Errorf("report does not say what is unverified:\n%s", res.Report)
	}
}

func TestReviewerLoopsEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action string
	}{{"rewrite", "write"}, {"research", "research"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.brain.ReviewScores = func(int) (agent.Scores, string) {
				return agent.Scores{FactCheck: 0.6, Completeness: 0.5, Logic: 0.7, Format: 0.9}, tc.action
			}
			e.opts.MaxReviews, e.opts.MaxRounds = 3, 2
			res := e.start("loop-"+tc.name, agent.Request{Question: "What does the EU AI Act require?"})
			checkReport(t, res)
			if res.Finish != agent.FinishMaxRounds {
				t.Errorf("finish %s", res.Finish)
			}
			if n := e.brain.Count("reviewer"); n != 3 {
				t.Errorf("%d reviews, want 3", n)
			}
			if n := e.brain.Count("writer"); n != 3 {
				t.Errorf("%d drafts, want 3", n)
			}
			if n := e.brain.Count("supervisor"); tc.action == "research" && n != 1 {
				t.Errorf("%d replans, want 1 (rounds are bounded)", n)
			}
			if !strings.Contains(strings.Join(res.Unverified, "\n"), "reviewer did not pass") {
				t.Errorf("unverified %q", res.Unverified)
			}
		})
	}
}

func TestReviewerPassesSecondDraft(t *testing.T) {
	e := newEnv(t)
	e.brain.ReviewScores = func(n int) (agent.Scores, string) {
		if n == 1 {
			return agent.Scores{FactCheck: 0.95, Completeness: 0.5, Logic: 0.8, Format: 1}, "write"
		}
		return agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "write"
	}
	res := e.start("pass2", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, res)
	if res.Finish != agent.FinishApproved || res.Review == nil || !res.Review.Approved || res.Review.Round != 2 {
		t.Errorf("finish %s review %+v", res.Finish, res.Review)
	}
	// the second draft was asked to address the feedback
	if !e.asked("writer", "Add more detail on penalties.") {
		t.Error("feedback not given to the writer")
	}
}

func TestSmallTalk(t *testing.T) {
	e := newEnv(t)
	e.brain.Intent = func(string) (string, string) { return "chat", "Hello! Ask me to research anything." }
	res := e.start("chat", agent.Request{Question: "hello there"})
	if res.Status != agent.StatusReplied || res.Reply == "" || res.Report != "" {
		t.Fatalf("%+v", res)
	}
	if len(e.web.Queries()) != 0 || e.srv.Calls() != 1 {
		t.Errorf("small talk searched (%d) or called the LLM %d times", len(e.web.Queries()), e.srv.Calls())
	}
}

func TestEmptyQuestion(t *testing.T) {
	e := newEnv(t)
	_, err := e.agent().Start(context.Background(), "x", agent.Request{Question: "  \n"}, nil)
	if !errors.Is(err, agent.ErrEmptyQuestion) {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMDownExtractiveReport(t *testing.T) {
	e := newEnv(t)
	e.srv.On(llmtest.Match{Func: func(*llmtest.Request) bool { return true }}, llmtest.ServerError())
	e.client = e.newClient(nil)
	res := e.start("down", agent.Request{Question: "What does the EU AI Act require?"})
	if res.Status != agent.StatusDone || !res.Extractive || res.Finish != agent.FinishLLMDown {
		t.Fatalf("status %s extractive %v finish %s", res.Status, res.Extractive, res.Finish)
	}
	if !strings.Contains(res.Report, "Extractive report") || res.Citations.Verified == 0 || res.Citations.Dropped != 0 {
		t.Errorf("citations %+v\n%s", res.Citations, res.Report)
	}
	if res.Plan == nil || !res.Plan.Fallback {
		t.Errorf("plan %+v", res.Plan)
	}
	if len(res.Unverified) == 0 {
		t.Error("no unverified note")
	}
}

func TestFollowUps(t *testing.T) {
	e := newEnv(t)
	e.brain.Intent = func(q string) (string, string) {
		switch {
		case strings.Contains(q, "shorter"):
			return "rewrite", ""
		case strings.Contains(q, "deeper"):
			return "research", "Penalties under the EU AI Act in detail"
		}
		return "research", ""
	}
	first := e.start("fu", agent.Request{Question: "What does the EU AI Act require?"})
	checkReport(t, first)
	searches := len(e.web.Queries())

	short := e.start("fu", agent.Request{Question: "Rewrite it shorter"})
	checkReport(t, short)
	if short.Finish != agent.FinishApproved && short.Finish != agent.FinishRewritten {
		t.Errorf("finish %s", short.Finish)
	}
	if len(e.web.Queries()) != searches {
		t.Error("a rewrite searched again")
	}
	if short.Citations.Verified >= first.Citations.Verified {
		t.Errorf("rewrite not shorter: %d vs %d citations", short.Citations.Verified, first.Citations.Verified)
	}
	if !e.asked("writer", "Previous draft:", "Instruction for this version: Rewrite it shorter") {
		t.Error("the rewrite did not get the previous report and the instruction")
	}

	deeper := e.start("fu", agent.Request{Question: "Dig deeper into penalties"})
	checkReport(t, deeper)
	if len(e.web.Queries()) == searches {
		t.Error("dig deeper did not search")
	}
	// the planner saw what was already known
	if !e.asked("planner", "Already known") {
		t.Error("planner not told the earlier findings")
	}
}

func TestClarify(t *testing.T) {
	e := newEnv(t)
	e.brain.Intent = func(q string) (string, string) {
		if strings.Contains(q, "Clarification") {
			return "research", ""
		}
		return "clarify", "Which regulation do you mean?"
	}
	res := e.start("cl", agent.Request{Question: "regulation?"})
	if res.Status != agent.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Kind != agent.InterruptClarify ||
		res.Interrupts[0].Question != "Which regulation do you mean?" {
		t.Fatalf("%+v", res)
	}
	res, err := e.agent().Resume(context.Background(), "cl", map[string]agent.Answer{res.Interrupts[0].ID: {Action: agent.ActionAnswer, Text: "the EU AI Act"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, res)
	if !slices.ContainsFunc(e.srv.Requests(), func(r *llmtest.Request) bool {
		return r.Node() == "planner" && strings.Contains(r.LastUser(), "the EU AI Act")
	}) {
		t.Error("the clarification did not reach the planner")
	}
}
