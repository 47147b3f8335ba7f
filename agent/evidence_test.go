package agent_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/citation"
)

// answerEvidenceRE is a line of evidence in a researcher's answer prompt.
var answerEvidenceRE = regexp.MustCompile(`(?m)^\[E(\d+)\] (.*) — "(.*)" \((.*), (\S+)\)$`)

// miniReportAnswer answers a subtask like a model that writes a report of
// its own: a heading, a statement per piece of evidence (the last first)
// tagged with the answer's number for it, and footnotes with a URL and a
// quote of its own.
func miniReportAnswer(prompt string) string {
	ms := answerEvidenceRE.FindAllStringSubmatch(prompt, -1)
	var b strings.Builder
	b.WriteString("## Answer\n\n")
	for i := len(ms) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "- **%s** [E%s][^%d].\n", strings.TrimSuffix(ms[i][2], "."), ms[i][1], i+1)
	}
	b.WriteString("\n## References\n\n[^1]: \"the researcher's own words\" — A summary, https://mini.example/report\n")
	return b.String()
}

// answersSection is the researchers' answers as the writer's prompt gives
// them.
func answersSection(t *testing.T, prompt string) string {
	t.Helper()
	i := strings.Index(prompt, "Researchers' answers")
	j := strings.Index(prompt, "\nEvidence (")
	if i < 0 || j < i {
		t.Fatalf("the writer's prompt has no answers before its evidence:\n%s", prompt)
	}
	return prompt[i:j]
}

var statementRE = regexp.MustCompile(`(?m)^- (.*) \[(E\d+(?:, E\d+)*)\]$`)

// TestOneEvidenceNumbering: the numbers the researchers' answers carry in
// the writer's prompt are the numbers of the writer's evidence list, the
// answers come as plain statements (no headings, footnotes or URLs of the
// researcher's own), and every piece of evidence an answer rests on is in
// the list even when the list is capped. Before, each answer kept its own
// numbering ("[E1]" of the second subtask was another piece of evidence in
// the writer's list) and its mini-report.
func TestOneEvidenceNumbering(t *testing.T) {
	e := newEnv(t)
	e.opts.MaxEvidence = 2
	e.brain.Answer = miniReportAnswer
	res := e.start("numbering", agent.Request{Question: "What does the EU AI Act require, and when?"})
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	prompts := e.brain.WriterPrompts()
	if len(prompts) == 0 {
		t.Fatal("no writer prompt")
	}
	p := prompts[0]
	ev := map[string]agenttest.Evidence{}
	for _, x := range agenttest.ParseEvidence(p) {
		ev[fmt.Sprintf("E%d", x.N)] = x
	}
	answers := answersSection(t, p)
	for _, bad := range []string{"mini.example", "[^", "researcher's own words", "## Answer", "## References", "**"} {
		if strings.Contains(answers, bad) {
			t.Errorf("the answers carry %q:\n%s", bad, answers)
		}
	}
	sts := statementRE.FindAllStringSubmatch(answers, -1)
	if len(sts) < 3 {
		t.Fatalf("want a statement per piece of evidence, got:\n%s", answers)
	}
	for _, st := range sts {
		for _, id := range strings.Split(st[2], ", ") {
			x, ok := ev[id]
			if !ok {
				t.Errorf("statement %q rests on %s, which is not in the writer's evidence (%d listed)", st[1], id, len(ev))
				continue
			}
			if !strings.Contains(st[1], strings.TrimSuffix(x.Claim, ".")) {
				t.Errorf("statement %q is tagged %s, which is %q", st[1], id, x.Claim)
			}
		}
	}
}

// paraphrase is how a small model quotes evidence: in its own words.
const paraphrase = "the rules were said to start applying in stages over the coming years"

// idWriter cites only by evidence id: every piece of evidence once, one
// with a paraphrase of its quote inline, and one id that was never given.
func idWriter(user string, _ bool) string {
	ev := agenttest.ParseEvidence(user)
	var b strings.Builder
	b.WriteString("# Report\n\n## Executive Summary\n\nWhat the sources say.\n\n## Key Findings\n\n")
	for i, x := range ev {
		if i == 0 {
			fmt.Fprintf(&b, "- The source puts it as \"%s\" [E%d].\n", paraphrase, x.N)
			continue
		}
		fmt.Fprintf(&b, "- %s [E%d]\n", x.Claim, x.N)
	}
	b.WriteString("- A claim with a made-up source [E999].\n\n## Detailed Analysis\n\nSee above.\n")
	return b.String()
}

// TestWriterCitesByEvidenceID: a writer that cites evidence by id gets
// footnotes the program writes from the evidence (exact quote, title, URL);
// an id never given out is dropped and counted. Before, "[E3]" was plain
// text and such a report had no citation at all.
func TestWriterCitesByEvidenceID(t *testing.T) {
	e := newEnv(t)
	e.brain.Writer = idWriter
	res := e.start("ids", agent.Request{Question: "What does the EU AI Act require, and when?"})
	ev := agenttest.ParseEvidence(e.brain.WriterPrompts()[0])
	if len(ev) < 2 {
		t.Fatalf("evidence: %d", len(ev))
	}
	c := res.Citations
	unknown := 0
	for _, f := range c.Footnotes {
		if f.Status == citation.UnknownEvidence {
			unknown++
		}
	}
	// the paraphrase is dropped as a quote, its evidence kept
	if c.Verified != len(ev) || unknown != 1 {
		t.Errorf("citations: %d evidence, got %+v\n%s", len(ev), c, res.Report)
	}
	for _, x := range ev {
		if !strings.Contains(res.Report, fmt.Sprintf("\"%s\" — %s, %s", x.Quote, x.Title, x.URL)) {
			t.Errorf("no footnote for E%d:\n%s", x.N, res.Report)
		}
	}
	if strings.Contains(res.Report, "[E") || strings.Contains(res.Report, "\""+paraphrase) {
		t.Errorf("an id or the paraphrase as a quotation is left:\n%s", res.Report)
	}
	if !strings.Contains(res.Report, "made-up source (unverified)") {
		t.Errorf("the unknown id's claim is not marked:\n%s", res.Report)
	}
}

// TestCiteByIDSavesReferences: a writer that cites by id, as the prompt
// now asks, writes no References (the program does) and keeps as many
// verified citations as one that copies every quote into them.
func TestCiteByIDSavesReferences(t *testing.T) {
	run := func(byID bool) (agent.Citations, int) {
		e := newEnv(t)
		e.brain.CiteByID = byID
		res := e.start("refs", agent.Request{Question: "What does the EU AI Act require, and when?"})
		if res.Status != agent.StatusDone {
			t.Fatalf("status %s", res.Status)
		}
		return res.Citations, len(e.brain.LastReport())
	}
	quotes, quotesLen := run(false)
	ids, idsLen := run(true)
	if ids.Verified < quotes.Verified || ids.Dropped != 0 || idsLen >= quotesLen {
		t.Errorf("by id: %d verified, %d dropped, %d bytes; copying quotes: %d verified, %d bytes", ids.Verified, ids.Dropped, idsLen, quotes.Verified, quotesLen)
	}
	t.Logf("writer output: %d bytes copying quotes, %d citing by id (%d output tokens saved at bytes/4); verified %d and %d",
		quotesLen, idsLen, (quotesLen-idsLen)/4, quotes.Verified, ids.Verified)
}
