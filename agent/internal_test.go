package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestDetectLanguage(t *testing.T) {
	for in, want := range map[string]string{
		"2026年の国内生成AI規制の動向を調べて":  "ja",
		"What is the EU AI Act?": "en",
		"人工智能监管":                 "zh",
		"인공지능 규제":                "ko",
		"AIの規制":                  "ja",
	} {
		if got := DetectLanguage(in); got != want {
			t.Errorf("DetectLanguage(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMergeSourcesKeepsRead(t *testing.T) {
	old := map[string]Source{"u": {URL: "u", Text: "read", Retrieved: true}}
	got := mergeSources(old, map[string]Source{"u": {URL: "u", Snippet: "hit"}, "v": {URL: "v"}})
	if !got["u"].Retrieved || len(got) != 2 || len(old) != 1 {
		t.Fatalf("%+v (old %+v)", got, old)
	}
}

func TestCleanPlan(t *testing.T) {
	a := &planning{&core{opts: Options{MaxQueries: 2}}}
	l := limits{subtasks: 2}
	// points and queries without subtasks are dealt out; evaluation types are
	// filtered and attribution is always added
	p := a.cleanPlan(planOut{Theme: "T", InvestigationPoints: []string{"A", "B", "C"}, SearchQueries: []string{"q1", "q2", "q3", "Q1"},
		EvaluationTypes: []string{"freshness", "bogus", " Plurality", "freshness"}}, l)
	if p == nil || len(p.Subtasks) != 2 || strings.Join(p.Subtasks[0].Queries, ",") != "q1,q3" ||
		!slices.Equal(p.EvaluationTypes, []Check{CheckFreshness, CheckPlurality, CheckAttribution}) {
		t.Fatalf("%+v", p)
	}
	if a.cleanPlan(planOut{}, l) != nil {
		t.Error("empty plan accepted")
	}
	fb := a.fallbackPlan("What is X?\nmore")
	if !fb.Fallback || len(fb.Subtasks) != 1 || fb.Subtasks[0].Queries[0] != "What is X?" {
		t.Errorf("%+v", fb)
	}
}

func TestExecSummaryAndSections(t *testing.T) {
	r := "# T\n\n## Executive Summary\n\nIt is in force [^1]. Fines apply.\n\n## Key Findings\n\n- a\n\n## References\n\n[^1]: \"q\" — t, https://x.org\n"
	if got := execSummary(r); got != "It is in force. Fines apply." {
		t.Errorf("summary %q", got)
	}
	out := insertSection(r, "## Limitations", []string{"x"})
	if !strings.Contains(out, "## Limitations\n\n- x\n\n## References") {
		t.Errorf("%s", out)
	}
	if formatScore(r) != 0.75 {
		t.Errorf("format score %v", formatScore(r))
	}
}

func TestSentences(t *testing.T) {
	got := sentences("First one. Second one!\n\n第一文。第二文？ e.g.x")
	want := []string{"First one.", "Second one!", "第一文。", "第二文？", "e.g.x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%q", got)
	}
}

func TestScoresWeighted(t *testing.T) {
	s := Scores{FactCheck: 1, Completeness: 0.5, Logic: 0.5, Format: 1}
	if w := s.Weighted(); w < 0.749 || w > 0.751 {
		t.Errorf("%v", w)
	}
	if f := citationFact(Citations{Cited: 4, Verified: 3, Dropped: 1}); f != 0.875 {
		t.Errorf("%v", f)
	}
}

func TestPlainQuestion(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"What does the EU AI Act require?", true},
		{"Compare the GPU export rules of the US and the EU", true},
		{"the EU AI Act requirements for providers?", true},
		{"hello there", false},
		{"regulation?", false},
		{"What can you do for our team?", false},
		{"Thanks, that was really helpful!", false},
		{"Rewrite it shorter and in bullet points", false},
		{"2026年の国内生成AI規制の動向を調べて", true},
		{"生成AIと著作権の関係について教えて", true},
		{"こんにちは、元気ですか？", false},
		{"AIの規制", false},
	} {
		if got := plainQuestion(tc.q, DetectLanguage(tc.q)); got != tc.want {
			t.Errorf("plainQuestion(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}
