package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"deepresearch/agent/llm/llmtest"
)

var askPages = map[string][2]string{
	"/timeline":  {"AI Act timeline", "The EU AI Act entered into force on 1 August 2024. Prohibited practices apply from 2 February 2025."},
	"/penalties": {"AI Act penalties", "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover."},
	"/sme":       {"AI Act and SMEs", "Small and medium-sized enterprises benefit from regulatory sandboxes under the act."},
}

// askWorld starts a fake LLM, a SearXNG instance and a web site, and returns
// the environment pointing at them.
func askWorld(t *testing.T) map[string]string {
	t.Helper()
	return askWorldWriting(t, footnoteQuotes)
}

// reportStyle writes the report's findings and references from the
// evidence the writer was given: each m is [all, E number, claim, quote,
// title, URL].
type reportStyle func(b *strings.Builder, ms [][]string)

// footnoteQuotes puts each quote in its footnote: [^1]: "quote" — Title, URL.
func footnoteQuotes(b *strings.Builder, ms [][]string) {
	for i, m := range ms {
		fmt.Fprintf(b, "- %s [^%d]\n", m[2], i+1)
	}
	b.WriteString("\n## Detailed Analysis\n\nSee above.\n\n## References\n\n")
	for i, m := range ms {
		fmt.Fprintf(b, "[^%d]: \"%s\" — %s, %s\n", i+1, m[3], m[4], m[5])
	}
}

// askWorldWriting is askWorld with a writer that writes in the given style.
func askWorldWriting(t *testing.T, style reportStyle) map[string]string {
	t.Helper()
	vars, _ := newAskWorld(t, worldOpts{style: style})
	return vars
}

// worldOpts varies the world of newAskWorld.
type worldOpts struct {
	style reportStyle          // the writer's style (default footnoteQuotes)
	pages map[string][2]string // path → title, text (default askPages)
	// pdfs are served as application/pdf at their path and come first in
	// the search results, titled "PDF <path>".
	pdfs map[string][]byte
	llm  []llmtest.Option // options of the fake model server
	// wrap, if set, sees each request with the scripted reply and returns
	// the reply to give (faults, hostile text).
	wrap func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply
}

// newAskWorld starts a fake LLM, a SearXNG instance and a web site, and
// returns the environment pointing at them and the model server.
func newAskWorld(t *testing.T, o worldOpts) (map[string]string, *llmtest.Server) {
	t.Helper()
	style, pages := o.style, o.pages
	if style == nil {
		style = footnoteQuotes
	}
	if pages == nil {
		pages = askPages
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if data, ok := o.pdfs[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(data)
			return
		}
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body><nav>Home | About</nav><article><h1>%s</h1><p>%s</p><p>%s</p></article><footer>(c) site</footer></body></html>",
			p[0], p[0], p[1], strings.Repeat("More context about the regulation follows here. ", 5))
	}))
	t.Cleanup(web.Close)
	sx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res []map[string]any
		for _, path := range slices.Sorted(maps.Keys(o.pdfs)) {
			res = append(res, map[string]any{"url": web.URL + path, "title": "PDF " + path, "content": "", "engine": "fake"})
		}
		order := []string{"/timeline", "/penalties", "/sme"} // askPages' order
		if o.pages != nil {
			order = slices.Sorted(maps.Keys(pages))
		}
		for _, path := range order {
			res = append(res, map[string]any{"url": web.URL + path, "title": pages[path][0], "content": pages[path][1][:40], "engine": "fake"})
		}
		json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": res})
	}))
	t.Cleanup(sx.Close)
	quote := regexp.MustCompile(`(?s)URL: (\S+)\n(.*?)(?:\n=== |\z)`)
	ev := regexp.MustCompile(`(?m)^\[E(\d+)\] (.*)\n  quote: "(.*)"\n  source: (.*), (\S+)$`)
	srv := llmtest.NewServer(t, func(r *llmtest.Request) llmtest.Reply {
		reply := scriptedReply(r, quote, ev, style)
		if o.wrap != nil {
			reply = o.wrap(r, reply)
		}
		return reply
	}, o.llm...)
	return map[string]string{
		"OPENAI_API_KEY":           "test",
		"OPENAI_BASE_URL":          srv.URL(),
		"DEEPRESEARCH_MODEL":       "fake",
		"SEARXNG_URL":              sx.URL,
		"DEEPRESEARCH_FETCH_ALLOW": "127.0.0.1",
		"DEEPRESEARCH_DATA_DIR":    t.TempDir(),
	}, srv
}

// sentenceEnd ends a sentence: a full stop before a space or a line break.
var sentenceEnd = regexp.MustCompile(`\.\s`)

// scriptedReply is the fake model's answer to each step of the agent.
func scriptedReply(r *llmtest.Request, quote, ev *regexp.Regexp, style reportStyle) llmtest.Reply {
	node := r.Node()
	switch {
	case node == "coordinator":
		return llmtest.JSON(map[string]string{"intent": "research", "reply": "", "research_question": "", "clarifying_question": "", "instruction": ""})
	case node == "planner":
		return llmtest.JSON(map[string]any{"theme": "EU AI Act", "investigation_points": []string{"Timeline", "Penalties"}, "search_queries": []string{"ai act timeline", "ai act fines"},
			"subtasks":  []map[string]any{{"title": "Timeline", "queries": []string{"ai act timeline"}}, {"title": "Penalties", "queries": []string{"ai act fines"}}},
			"plan_text": "Two points.", "evaluation_types": []string{"attribution"}})
	case strings.HasSuffix(node, ".execute"):
		var fs []map[string]string
		for _, m := range quote.FindAllStringSubmatch(r.LastUser(), -1) {
			s := strings.TrimSpace(m[2])
			if loc := sentenceEnd.FindStringIndex(s); loc != nil { // the first sentence
				s = s[:loc[0]+1]
			}
			fs = append(fs, map[string]string{"claim": s, "quote": s, "url": m[1]})
		}
		return llmtest.JSON(map[string]any{"summary": "summary", "findings": fs})
	case strings.HasSuffix(node, ".answer_subtask"):
		return llmtest.Text("answer [E1]")
	case strings.HasSuffix(node, ".reflect"):
		return llmtest.JSON(map[string]any{"is_completed": true, "advice": "", "gaps": []string{}, "next_queries": []string{}})
	case node == "writer":
		var b strings.Builder
		b.WriteString("# EU AI Act\n\n## Executive Summary\n\nThe act is in force.\n\n## Key Findings\n\n")
		style(&b, ev.FindAllStringSubmatch(r.LastUser(), -1))
		return llmtest.Text(b.String())
	case node == "analyst":
		return tableProposal(r.LastUser(), ev)
	case node == "reviewer":
		return llmtest.JSON(map[string]any{"scores": map[string]float64{"fact_check": 1, "completeness": 0.9, "logic": 0.9, "format": 1},
			"evaluations": []any{}, "feedback": "", "suggested_action": "write", "issues": []any{}})
	}
	return llmtest.Error(400, "unexpected node "+node)
}

func getenv(m map[string]string) env { return func(k string) string { return m[k] } }

func TestAskEndToEnd(t *testing.T) {
	vars := askWorld(t)
	out := filepath.Join(t.TempDir(), "report.md")
	var stdout, stderr bytes.Buffer
	err := runAsk(context.Background(), []string{"-o", out, "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Executive Summary", "## References", `[^1]: "The EU AI Act entered into force on 1 August 2024."`} {
		if !strings.Contains(string(report), s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	for _, s := range []string{"plan: EU AI Act", "→ [1.1] Timeline", "read AI Act", "tokens so far", "verified / 0 dropped", "0 wasted reads, 0 off-topic results skipped", "thread cli-"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("progress lacks %q:\n%s", s, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout not empty with -o: %q", stdout.String())
	}
}

func TestAskInterrupts(t *testing.T) {
	vars := askWorld(t)
	ctx := context.Background()
	// --yes approves the plan and the draft
	var stdout, stderr bytes.Buffer
	if err := runAsk(ctx, []string{"--yes", "--approve-plan", "--approve-draft", "-q", "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "## Key Findings") {
		t.Errorf("no report on stdout: %q", stdout.String())
	}
	// without an answer on stdin the run stops and says how to resume
	stdout.Reset()
	stderr.Reset()
	err := runAsk(ctx, []string{"--approve-plan", "What does the EU AI Act require?"}, getenv(vars), strings.NewReader(""), &stdout, &stderr)
	m := regexp.MustCompile(`--thread (cli-\S+)`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("err = %v, want how to resume", err)
	}
	// a later process answers at the prompt
	stdout.Reset()
	err = runAsk(ctx, []string{"--thread", m[1]}, getenv(vars), strings.NewReader("r start with penalties\na\n"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "## References") {
		t.Errorf("no report: %q", stdout.String())
	}
}

func TestAskErrors(t *testing.T) {
	vars := askWorld(t)
	for _, tc := range []struct {
		name string
		args []string
		drop []string
		want string
	}{
		{"empty question", []string{"  "}, nil, "question is empty"},
		{"bad depth", []string{"--depth", "huge", "q"}, nil, "--depth"},
		{"team too large", []string{"--team", "9", "q"}, nil, "--team 9: want 1 to 4"},
		{"no key", []string{"q"}, []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}, "OPENAI_API_KEY"},
		{"no search", []string{"q"}, []string{"SEARXNG_URL"}, "TAVILY_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := map[string]string{}
			for k, val := range vars {
				v[k] = val
			}
			for _, k := range tc.drop {
				delete(v, k)
			}
			var stdout, stderr bytes.Buffer
			err := runAsk(context.Background(), tc.args, getenv(v), strings.NewReader(""), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line with %q", err, tc.want)
			}
		})
	}
	// main maps a usage error to exit code 2 with one line
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"ask", ""}, getenv(vars), strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
