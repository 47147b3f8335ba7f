package agent_test

import (
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
)

// TestOnePageOneSource: a page reached by a redirect link, by a
// rel=canonical alias on its site and as a copy with the same text is one
// source: summarised once, cited and listed under its one URL. A canonical
// URL on another site is not believed. Before, each URL was a source of its
// own: the page was summarised four times and listed under four URLs.
func TestOnePageOneSource(t *testing.T) {
	const (
		page     = "https://news.example/ai-act-timeline"
		redirect = "https://news.example/go/42"
		amp      = "https://news.example/amp/ai-act-timeline"
		mirror   = "https://mirror.example/eu/ai-act-timeline"
		claimer  = "https://other.example/fines-explained" // claims the penalties page's URL
		first    = "The EU AI Act entered into force on 1 August 2024."
	)
	text := first + " Prohibited practices apply from 2 February 2025. Obligations for general-purpose AI models apply from 2 August 2025." +
		" Most obligations for high-risk systems apply from 2 August 2026, and the Commission may adjust some dates through the digital omnibus."
	pages := agenttest.EnglishPages()
	pages[0].Text = text
	pages = append(pages,
		agenttest.Page{URL: amp, Title: "AI Act timeline (AMP)", Text: text},
		agenttest.Page{URL: mirror, Title: "Mirror: AI Act timeline", Text: text},
		agenttest.Page{URL: claimer, Title: "Fines explained", Text: "Fines under the AI Act are explained here in plain words for small firms and their advisers."})
	e := newEnv(t)
	e.web = agenttest.NewWorld(pages...)
	e.web.Redirects = map[string]string{redirect: page}
	e.web.Canonicals = map[string]string{amp: page, claimer: "https://law.example/penalties"}
	e.web.Find = func(string) []agenttest.Page {
		return []agenttest.Page{{URL: redirect, Title: "AI Act timeline", Text: text}, pages[len(pages)-3], pages[len(pages)-2], pages[0], pages[len(pages)-1], pages[1]}
	}
	e.opts.MaxURLs = 8
	summarised := 0
	e.brain.Wrap = func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if agenttest.Kind(r.Node()) == "execute" {
			e.mu.Lock()
			summarised += strings.Count(r.LastUser(), first)
			e.mu.Unlock()
		}
		return scripted
	}
	res := e.start("alias", agent.Request{Question: "What does the EU AI Act require, and when?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	var urls []string
	for _, s := range res.Sources {
		urls = append(urls, s.URL)
	}
	sec := sourcesSection(t, res.Report, "## Sources read")
	for _, u := range []string{redirect, amp, mirror} {
		if strings.Contains(res.Report, u) {
			t.Errorf("the report names the alias %s:\n%s", u, res.Report)
		}
	}
	if n := strings.Count(sec, page); n != 1 {
		t.Errorf("%s listed %d times:\n%s", page, n, sec)
	}
	if !strings.Contains(sec, claimer) {
		t.Errorf("the page claiming another site's URL is not a source of its own:\n%s", sec)
	}
	// each researcher may summarise the page once (three subtasks)
	if summarised == 0 || summarised > 3 {
		t.Errorf("the page was summarised %d times by three researchers", summarised)
	}
	if !strings.Contains(res.Report, "— AI Act timeline, "+page) {
		t.Errorf("the page is not cited under its URL:\n%s", res.Report)
	}
	t.Logf("sources: %v", urls)
}
