package agent_test

import (
	"fmt"
	"strings"
	"testing"

	"deepresearch/agent"
	"deepresearch/agent/agenttest"
	"deepresearch/agent/llm/llmtest"
)

// inlineWriter writes the style many models use: the quote inline right
// before the marker, the footnote with title and URL only.
func inlineWriter(user string, ja bool) string {
	return footnoteReport(user, 4, "\n## Detailed Analysis\n\nSee above.\n", func(i int, quote string) string {
		if ja {
			return fmt.Sprintf("- 情報源によれば「%s」[^%d]\n", quote, i+1)
		}
		return fmt.Sprintf("- The source says \"%s\"[^%d].\n", quote, i+1)
	})
}

// fabricatingWriter quotes words that are on no page.
func fabricatingWriter(user string, ja bool) string {
	return footnoteReport(user, 2, "", func(i int, _ string) string {
		if ja {
			return fmt.Sprintf("- 報告書は「規制は来年から全面的に撤廃される予定である」[^%d]と述べる。\n", i+1)
		}
		return fmt.Sprintf("- The page says \"the regulation will be repealed entirely next year\"[^%d].\n", i+1)
	})
}

// footnoteReport writes a report with one key finding, from finding, for each
// of the first n pieces of evidence in the writer's prompt, then middle, then
// the references as footnotes of title and URL.
func footnoteReport(user string, n int, middle string, finding func(i int, quote string) string) string {
	ev := agenttest.ParseEvidence(user)
	ev = ev[:min(n, len(ev))]
	var b strings.Builder
	b.WriteString("# Report\n\n## Executive Summary\n\nWhat the sources say.\n\n## Key Findings\n\n")
	for i, m := range ev {
		b.WriteString(finding(i, m.Quote))
	}
	b.WriteString(middle + "\n## References\n\n")
	for i, m := range ev {
		fmt.Fprintf(&b, "[^%d]: %s, %s\n", i+1, m.Title, m.URL)
	}
	return b.String()
}

// sourcesSection returns the report's closing list of sources read.
func sourcesSection(t *testing.T, report, heading string) string {
	t.Helper()
	i := strings.LastIndex(report, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("report has no %q section:\n%s", heading, report)
	}
	sec := report[i+1:]
	if strings.Contains(sec[len(heading):], "\n#") {
		t.Errorf("the sources are not the end of the report:\n%s", report)
	}
	return sec
}

func TestInlineQuotesVerifiedAndSourcesListed(t *testing.T) {
	for _, tc := range []struct {
		question, heading string
	}{
		{"What does the EU AI Act require, and when?", "## Sources read"},
		{"2026年の国内生成AI規制の動向を調べて", "## 参照した情報源"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			e := newEnv(t)
			e.brain.Writer = inlineWriter
			res := e.start("inline", agent.Request{Question: tc.question})
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			c := res.Citations
			if c.Cited == 0 || c.Verified != c.Cited || c.Dropped != 0 {
				t.Errorf("citations %+v\n%s", c, res.Report)
			}
			sec := sourcesSection(t, res.Report, tc.heading)
			if len(res.Sources) == 0 {
				t.Fatal("no sources read")
			}
			for _, s := range res.Sources {
				if !strings.Contains(sec, s.URL) || !strings.Contains(sec, s.Title) {
					t.Errorf("source %s (%s) not listed:\n%s", s.URL, s.Title, sec)
				}
			}
		})
	}
}

func TestDroppedCitationsMarkedAndSourcesStillListed(t *testing.T) {
	for _, tc := range []struct {
		question, heading, mark, fabricated string
	}{
		{"What does the EU AI Act require, and when?", "## Sources read", "(unverified)", "the regulation will be repealed entirely next year"},
		{"2026年の国内生成AI規制の動向を調べて", "## 参照した情報源", "（未検証）", "規制は来年から全面的に撤廃される予定である"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			e := newEnv(t)
			e.brain.Writer = fabricatingWriter
			res := e.start("fab", agent.Request{Question: tc.question})
			if res.Citations.Verified != 0 || res.Citations.Dropped == 0 {
				t.Errorf("citations %+v", res.Citations)
			}
			for _, q := range []string{"\"" + tc.fabricated + "\"", "「" + tc.fabricated + "」"} {
				if strings.Contains(res.Report, q) {
					t.Errorf("the dropped quote is still a quotation %s:\n%s", q, res.Report)
				}
			}
			if !strings.Contains(res.Report, tc.fabricated+tc.mark) && !strings.Contains(res.Report, tc.fabricated+" "+tc.mark) {
				t.Errorf("the claim is not marked %s:\n%s", tc.mark, res.Report)
			}
			sec := sourcesSection(t, res.Report, tc.heading)
			for _, s := range res.Sources {
				if !strings.Contains(sec, s.URL) {
					t.Errorf("source %s not listed:\n%s", s.URL, sec)
				}
			}
		})
	}
}

func TestPlaceholderNeverReachesReport(t *testing.T) {
	for _, tc := range []struct {
		question    string
		empty       []string // queries with these words find nothing
		placeholder string
	}{
		{"What does the EU AI Act require, and when?", []string{"fines", "Penalties"}, "No sources were found for this subtask."},
		{"2026年の国内生成AI規制の動向を調べて", []string{"ガイドライン", "著作権"}, "このサブタスクについて情報源が見つかりませんでした。"},
	} {
		t.Run(tc.empty[0], func(t *testing.T) {
			e := newEnv(t)
			e.web.Empty = func(q string) bool {
				for _, w := range tc.empty {
					if strings.Contains(q, w) {
						return true
					}
				}
				return false
			}
			e.brain.ReflectDone = func(int) bool { return false }
			res := e.start("ph", agent.Request{Question: tc.question})
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			if len(e.brain.WriterPrompts()) == 0 {
				t.Fatal("the writer was never asked")
			}
			for _, p := range e.brain.WriterPrompts() {
				if strings.Contains(p, tc.placeholder) {
					t.Errorf("the writer was shown the placeholder as a finding:\n%s", p)
				}
			}
			if strings.Contains(res.Report, tc.placeholder) {
				t.Errorf("report has the placeholder:\n%s", res.Report)
			}
		})
	}
}

func TestReviewerFeedbackNeverASubtaskOrQuery(t *testing.T) {
	const fb = "The draft is complete and well supported by the cited sources."
	for _, tc := range []struct {
		name   string
		replan func(string) llmtest.Reply
	}{
		{"replan proposes nothing", func(string) llmtest.Reply { return llmtest.JSON(map[string]any{"subtasks": []any{}}) }},
		{"replan echoes the feedback", func(string) llmtest.Reply {
			return llmtest.JSON(map[string]any{"subtasks": []map[string]any{{"title": fb, "queries": []string{fb}}}})
		}},
		{"replan fails", func(string) llmtest.Reply { return llmtest.Error(400, "bad request") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.brain.Replan = tc.replan
			e.brain.Feedback = func(int) string { return fb }
			e.brain.ReviewScores = func(n int) (agent.Scores, string) {
				return agent.Scores{FactCheck: 0.6, Completeness: 0.5, Logic: 0.6, Format: 1}, "research"
			}
			res := e.start("fb", agent.Request{Question: "What does the EU AI Act require, and when?"})
			if res.Status != agent.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
			for _, q := range e.web.Queries() {
				if strings.Contains(norm(q), norm(fb)) {
					t.Errorf("the reviewer's feedback became a search query: %q", q)
				}
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, ev := range e.events {
				if ev.Subtask != nil && strings.Contains(norm(ev.Subtask.Title), norm(fb)) {
					t.Errorf("the reviewer's feedback became a subtask: %+v", ev.Subtask)
				}
			}
		})
	}
}

func TestNearMissFindingsRepaired(t *testing.T) {
	e := newEnv(t)
	// the summariser quotes one page with a word changed
	e.brain.FindingQuote = func(q string) string { return strings.Replace(q, "can reach", "may reach", 1) }
	res := e.start("near", agent.Request{Question: "What does the EU AI Act require, and when?"})
	if res.Status != agent.StatusDone || res.Citations.Verified == 0 {
		t.Fatalf("status %s citations %+v\n%s", res.Status, res.Citations, res.Report)
	}
	if len(e.brain.WriterPrompts()) == 0 {
		t.Fatal("the writer was never asked")
	}
	// the evidence the writer saw quotes the page exactly
	p := e.brain.WriterPrompts()[0]
	const exact = `quote: "Fines for prohibited AI practices can reach 35 million euros or 7% of worldwide annual turnover."`
	if !strings.Contains(p, exact) {
		t.Errorf("writer's evidence lacks the page's exact words %s:\n%s", exact, p)
	}
}
