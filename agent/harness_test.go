package agent_test

import (
	"context"
	"fmt"
	"io"
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
	"deepresearch/graph"
	"deepresearch/graph/memsaver"
	"deepresearch/tools/search"
)

type page struct{ url, title, text string }

var corpusEN = []page{
	{"https://news.example/ai-act-timeline", "AI Act timeline", "The EU AI Act entered into force on 1 August 2024. Prohibited practices apply from 2 February 2025. Obligations for general-purpose AI models apply from 2 August 2025."},
	{"https://law.example/penalties", "AI Act penalties", "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover. Lower tiers apply to other infringements."},
	{"https://blog.example/sme", "AI Act and SMEs", "Small and medium-sized enterprises benefit from regulatory sandboxes. The Commission publishes guidance for smaller companies."},
	{"https://gov.example/gpai", "GPAI code of practice", "Providers of general-purpose AI models must publish a summary of training content. A code of practice was published in July 2025."},
	{"https://think.example/analysis", "Analysis of enforcement", "National market surveillance authorities enforce most provisions. The AI Office supervises general-purpose AI models."},
	{"https://stats.example/adoption", "AI adoption statistics", "In 2024, 13.5% of EU enterprises used artificial intelligence technologies. Adoption was highest among large enterprises."},
}

var corpusJA = []page{
	{"https://jp.example/ai-law", "AI推進法の成立", "2025年5月、AI推進法が国会で成立した。本法には罰則規定は設けられていない。政府はAI基本計画を策定する。"},
	{"https://jp.example/guideline", "AI事業者ガイドライン", "総務省と経済産業省はAI事業者ガイドラインを公表した。ガイドラインは法的拘束力を持たない。"},
	{"https://jp.example/copyright", "生成AIと著作権", "文化庁は生成AIと著作権に関する考え方を整理した。学習段階と生成・利用段階を分けて検討している。"},
	{"https://jp.example/strategy", "AI戦略本部", "AI推進法に基づき、内閣にAI戦略本部が設置される。本部長は内閣総理大臣が務める。"},
	{"https://jp.example/survey", "企業の生成AI利用調査", "国内企業の約4割が生成AIを業務で利用していると回答した。利用は大企業で進んでいる。"},
}

func firstSentence(text string) string {
	for i, r := range text {
		if r == '。' {
			return text[:i+len("。")]
		}
		if r == '.' && i+1 < len(text) && text[i+1] == ' ' {
			return text[:i+1]
		}
	}
	return text
}

// fakeSearch returns the corpus of the query's language.
type fakeSearch struct {
	mu      sync.Mutex
	queries []string
	// barrier, when > 0, holds each search until that many are in flight
	// (proof that researchers run in parallel, without timing).
	barrier int
	waiting int
	release chan struct{}
	// onSearch runs before each search.
	onSearch func(n int)
	// empty, when set, says which queries find nothing.
	empty func(q string) bool
	n     atomic.Int64
}

func (f *fakeSearch) Search(ctx context.Context, q search.Query) ([]search.Result, error) {
	n := int(f.n.Add(1))
	if f.onSearch != nil {
		f.onSearch(n)
	}
	f.mu.Lock()
	f.queries = append(f.queries, q.Text)
	if f.barrier > 0 {
		if f.release == nil {
			f.release = make(chan struct{})
		}
		f.waiting++
		rel := f.release
		if f.waiting == f.barrier {
			close(rel)
			f.barrier = 0
		}
		f.mu.Unlock()
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		f.mu.Unlock()
	}
	if f.empty != nil && f.empty(q.Text) {
		return nil, nil
	}
	corpus := corpusEN
	if agent.DetectLanguage(q.Text) != "en" {
		corpus = corpusJA
	}
	var out []search.Result
	for i, p := range corpus {
		// rotate so different queries lead with different pages
		p = corpus[(i+len(q.Text))%len(corpus)]
		out = append(out, search.Result{Title: p.title, URL: p.url, Snippet: firstSentence(p.text), Source: "fake"})
	}
	if q.MaxResults > 0 && len(out) > q.MaxResults {
		out = out[:q.MaxResults]
	}
	return out, nil
}

func (f *fakeSearch) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

type fakeFetch struct{ n atomic.Int64 }

func (f *fakeFetch) Fetch(ctx context.Context, u string) (agent.Page, error) {
	f.n.Add(1)
	for _, p := range append(corpusEN, corpusJA...) {
		if p.url == u {
			return agent.Page{URL: u, FinalURL: u, Title: p.title, Text: "Menu Home About\n\n" + p.text + "\n\nFooter"}, nil
		}
	}
	return agent.Page{}, fmt.Errorf("404 %s", u)
}

// brain scripts the fake LLM: it answers each agent step plausibly, using
// what the prompt contains (pages, evidence), with knobs for the tests.
type brain struct {
	mu sync.Mutex
	// reviewScores returns the reviewer's scores for review n (1-based).
	reviewScores func(n int) (agent.Scores, string)
	// reflectDone decides the reflection of a try.
	reflectDone func(try int) bool
	// selectTools, when set, replies to the researcher's select step.
	selectTools func(r *llmtest.Request) llmtest.Reply
	// extraFootnotes are appended to every report (fabrications).
	extraFootnotes []string
	// writer, when set, writes the report from the writer's prompt.
	writer func(user string, ja bool) string
	// replan, when set, replies to the supervisor's replanning.
	replan func(user string) llmtest.Reply
	// feedback, when set, is the reviewer's feedback on review n.
	feedback func(n int) string
	// findingQuote, when set, rewrites the quotes the summariser returns.
	findingQuote func(q string) string
	// writerPrompts are the prompts the writer was given.
	writerPrompts []string
	// writerText replaces the report.
	intent func(q string) (string, string)
	// badJSON makes every n-th structured reply broken JSON (the client
	// must repair it with one more call).
	badJSON   int
	jsonCalls int
	reviews   int
	calls     map[string]int
	lastWrite string
}

func newBrain() *brain {
	return &brain{calls: map[string]int{}}
}

func (b *brain) count(node string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[node]
}

var (
	evidenceRE = regexp.MustCompile(`(?m)^\[E(\d+)\] (.*)\n  quote: "(.*)"\n  source: (.*), (\S+)$`)
	questionRE = regexp.MustCompile(`(?m)^Question: (.*)$`)
	subtaskRE  = regexp.MustCompile(`(?m)^Subtask: (.*)$`)
	attemptRE  = regexp.MustCompile(`This is attempt (\d+) of`)
)

func nodeKind(n string) string {
	if i := strings.LastIndex(n, "."); strings.HasPrefix(n, "researcher[") && i > 0 {
		return n[i+1:]
	}
	return n
}

func (b *brain) respond(r *llmtest.Request) llmtest.Reply {
	kind := nodeKind(r.Node())
	b.mu.Lock()
	b.calls[kind]++
	b.mu.Unlock()
	if r.FormatType() != "" && r.FormatType() != "text" && b.badJSON > 0 {
		b.mu.Lock()
		b.jsonCalls++
		bad := b.jsonCalls%b.badJSON == 0
		b.mu.Unlock()
		if bad {
			return llmtest.Text("Sure, here it is: {\"intent\": \"research\", \"reply\": ")
		}
	}
	user := r.LastUser()
	q := ""
	if m := questionRE.FindStringSubmatch(user); m != nil {
		q = m[1]
	}
	ja := agent.DetectLanguage(user) == "ja"
	switch kind {
	case "coordinator":
		msg := strings.TrimSpace(strings.TrimPrefix(user[strings.LastIndex(user, "Latest message:"):], "Latest message:"))
		intent, extra := "research", ""
		if b.intent != nil {
			intent, extra = b.intent(msg)
		}
		switch intent {
		case "chat":
			return llmtest.JSON(map[string]string{"intent": "chat", "reply": extra, "research_question": "", "clarifying_question": "", "instruction": ""})
		case "clarify":
			return llmtest.JSON(map[string]string{"intent": "clarify", "reply": "", "research_question": "", "clarifying_question": extra, "instruction": ""})
		case "rewrite":
			return llmtest.JSON(map[string]string{"intent": "rewrite", "reply": "", "research_question": "", "clarifying_question": "", "instruction": msg})
		}
		return llmtest.JSON(map[string]string{"intent": "research", "reply": "", "research_question": extra, "clarifying_question": "", "instruction": ""})
	case "planner":
		if ja {
			return llmtest.JSON(map[string]any{"theme": "国内の生成AI規制", "investigation_points": []string{"法制度", "ガイドライン"},
				"search_queries": []string{"AI推進法 成立", "AI事業者ガイドライン"},
				"subtasks":       []map[string]any{{"title": "法制度", "queries": []string{"AI推進法 成立"}}, {"title": "ガイドライン", "queries": []string{"AI事業者ガイドライン", "生成AI 著作権 文化庁"}}},
				"plan_text":      "法制度とガイドラインを調べる。", "evaluation_types": []string{"freshness", "attribution"}})
		}
		return llmtest.JSON(map[string]any{"theme": "EU AI Act", "investigation_points": []string{"Timeline", "Penalties", "SMEs"},
			"search_queries": []string{"EU AI Act timeline", "AI Act fines", "AI Act SMEs"},
			"subtasks":       []map[string]any{{"title": "Timeline", "queries": []string{"EU AI Act timeline"}}, {"title": "Penalties", "queries": []string{"AI Act fines"}}, {"title": "SMEs", "queries": []string{"AI Act SMEs sandboxes"}}},
			"plan_text":      "Research timeline, penalties and SMEs.", "evaluation_types": []string{"completeness", "attribution"}})
	case "supervisor":
		if b.replan != nil {
			return b.replan(user)
		}
		st := "more detail"
		if ja {
			st = "詳細"
		}
		return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": st, "queries": []string{q + " " + st + fmt.Sprint(b.count("supervisor"))}}}})
	case "select":
		if b.selectTools != nil {
			return b.selectTools(r)
		}
		sub := ""
		if m := subtaskRE.FindStringSubmatch(user); m != nil {
			sub = m[1]
		}
		return llmtest.Call("search", map[string]any{"queries": []string{sub + " details " + fmt.Sprint(b.count("select"))}})
	case "execute":
		var fs []map[string]string
		for _, part := range strings.Split(user, "\n=== Page ")[1:] {
			lines := strings.SplitN(part, "\n", 3)
			if len(lines) < 3 {
				continue
			}
			url := strings.TrimPrefix(lines[1], "URL: ")
			text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[2]), "Menu Home About"))
			s := firstSentence(text)
			q := s
			if b.findingQuote != nil {
				q = b.findingQuote(s)
			}
			fs = append(fs, map[string]string{"claim": "Claim: " + s, "quote": q, "url": url})
		}
		return llmtest.JSON(map[string]any{"summary": fmt.Sprintf("%d pages summarised.", len(fs)), "findings": fs})
	case "answer_subtask":
		return llmtest.Text("The evidence shows the main facts [E1].")
	case "reflect":
		try := 1
		if m := attemptRE.FindStringSubmatch(r.System()); m != nil {
			fmt.Sscan(m[1], &try)
		}
		done := true
		if b.reflectDone != nil {
			done = b.reflectDone(try)
		}
		return llmtest.JSON(map[string]any{"is_completed": done, "advice": "look for numbers", "gaps": []string{}, "next_queries": []string{"numbers " + fmt.Sprint(try)}})
	case "writer":
		b.mu.Lock()
		b.writerPrompts = append(b.writerPrompts, r.System()+"\n"+user)
		b.mu.Unlock()
		if b.writer != nil {
			return llmtest.Text(b.writer(user, ja))
		}
		return llmtest.Text(b.report(user, ja))
	case "reviewer":
		b.mu.Lock()
		b.reviews++
		n := b.reviews
		b.mu.Unlock()
		sc, act := agent.Scores{FactCheck: 0.95, Completeness: 0.9, Logic: 0.9, Format: 1}, "write"
		if b.reviewScores != nil {
			sc, act = b.reviewScores(n)
		}
		fb := "Add more detail on penalties."
		if b.feedback != nil {
			fb = b.feedback(n)
		}
		return llmtest.JSON(map[string]any{"scores": sc, "evaluations": []map[string]any{{"type": "attribution", "pass": true, "reason": "cited"}},
			"feedback": fb, "suggested_action": act, "issues": []map[string]string{}})
	}
	return llmtest.Error(400, "brain: unexpected node "+r.Node())
}

func (b *brain) report(user string, ja bool) string {
	ev := evidenceRE.FindAllStringSubmatch(user, -1)
	var sb strings.Builder
	title, summary, bullet := "Report", "This report summarises what the sources say about the question.", "Finding"
	if ja {
		title, summary, bullet = "調査レポート", "本レポートは、収集した情報源に基づき国内の生成AI規制の動向をまとめたものである。", "知見"
	}
	short := strings.Contains(user, "Instruction for this version")
	fmt.Fprintf(&sb, "# %s\n\n## Executive Summary\n\n%s\n\n## Key Findings\n\n", title, summary)
	n := 0
	for i, m := range ev {
		if i == 4 || short && i == 1 {
			break
		}
		n++
		fmt.Fprintf(&sb, "- %s %d: %s [^%d]\n", bullet, n, m[2], n+10)
	}
	sb.WriteString("\n## Detailed Analysis\n\n### Analysis\n\n")
	if len(ev) > 0 {
		fmt.Fprintf(&sb, "As noted before [^%d], the picture is consistent.\n", 11)
	}
	for i, f := range b.extraFootnotes {
		fmt.Fprintf(&sb, "Another claim %d [^x%d].\n", i, i)
		_ = f
	}
	sb.WriteString("\n## References\n\n")
	for i := 0; i < n; i++ {
		m := ev[i]
		fmt.Fprintf(&sb, "[^%d]: \"%s\" — %s, %s\n", i+11, m[3], m[4], m[5])
	}
	for i, f := range b.extraFootnotes {
		fmt.Fprintf(&sb, "[^x%d]: %s\n", i, f)
	}
	b.mu.Lock()
	b.lastWrite = sb.String()
	b.mu.Unlock()
	return sb.String()
}

type env struct {
	t      *testing.T
	srv    *llmtest.Server
	brain  *brain
	client *llm.Client
	search *fakeSearch
	fetch  *fakeFetch
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
	b := newBrain()
	e := &env{t: t, brain: b, search: &fakeSearch{}, fetch: &fakeFetch{}, store: memsaver.New(memsaver.Options{}), notes: agent.NewMemNotes()}
	e.srv = llmtest.NewServer(t, b.respond, srvOpts...)
	e.client = e.newClient(nil)
	return e
}

func (e *env) newClient(tune func(*llm.Options)) *llm.Client {
	o := llm.Options{APIKey: "test", BaseURL: e.srv.URL(), Model: "fake", HTTPClient: e.srv.Client(), Sleep: llm.NoSleep,
		Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(&o)
	}
	c, err := llm.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// agent returns a new Agent over the env's store: a "new process" each call.
func (e *env) agent() *agent.Agent {
	e.t.Helper()
	d := agent.Deps{LLM: e.client, Search: e.search, Fetch: e.fetch, Coder: e.coder, Saver: e.store, Notes: e.notes,
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

var _ graph.Saver = (*memsaver.Store)(nil)

func discard() io.Writer { return io.Discard }
