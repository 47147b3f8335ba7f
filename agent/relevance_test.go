package agent_test

import (
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
)

// TestReadWhatIsRelevant: a search's plainly off-topic results (judged by
// title, snippet and URL) are not read, a page read whose text turns out
// to have nothing of the question gives no evidence, and neither reaches
// the writer or the sources read; the result counts them. Before, both
// were read, summarised and handed to the writer as evidence.
func TestReadWhatIsRelevant(t *testing.T) {
	const (
		bio = "https://green.example/bioplastics-packaging"
		pdf = "https://files.example/doc-4471.pdf"
	)
	pages := append(agenttest.EnglishPages(),
		agenttest.Page{URL: bio, Title: "Bioplastics in food packaging", Text: "Bioplastics made from corn starch replace polystyrene trays in supermarkets. Compostable films still cost twice as much."},
		agenttest.Page{URL: pdf, Title: "", Text: "Fisheries quota regulation for the northern shelf. Catch limits for cod and haddock are set each December by the council."})
	e := newEnv(t)
	e.web = agenttest.NewWorld(pages...)
	n := len(pages)
	e.web.Find = func(string) []agenttest.Page {
		return []agenttest.Page{pages[n-2], {URL: pdf}, pages[0], pages[1], pages[2]}
	}
	e.opts.MaxURLs = 8
	var summarised []string
	e.brain.Wrap = func(r *llmtest.Request, scripted llmtest.Reply) llmtest.Reply {
		if agenttest.Kind(r.Node()) == "execute" {
			e.mu.Lock()
			summarised = append(summarised, r.LastUser())
			e.mu.Unlock()
		}
		return scripted
	}
	res := e.start("relevance", agent.Request{Question: "What does the EU AI Act require, and when?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	for _, p := range summarised {
		for _, u := range []string{bio, pdf} {
			if strings.Contains(p, u) {
				t.Errorf("%s was summarised", u)
			}
		}
	}
	wp := strings.Join(e.brain.WriterPrompts(), "\n")
	for _, s := range []string{"Bioplastics", "Fisheries", bio, pdf} {
		if strings.Contains(wp, s) || strings.Contains(res.Report, s) {
			t.Errorf("%q reached the writer or the report", s)
		}
	}
	if res.Reads.Skipped == 0 || res.Reads.OffTopic == 0 || res.Reads.Read == 0 {
		t.Errorf("reads %+v: want the off-topic result skipped and the off-topic page counted", res.Reads)
	}
	t.Logf("reads %+v, wasted %d", res.Reads, res.Reads.Wasted())
}
