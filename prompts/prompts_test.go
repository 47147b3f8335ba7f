package prompts

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var ev = []Evidence{
	{N: 1, Claim: "The act took effect in 2025.", Quote: "The act took effect on 1 June 2025.", Title: "AI Act explained", URL: "https://example.org/ai-act"},
	{N: 2, Claim: "罰則はない。", Quote: "本法には罰則規定は設けられていない。", Title: "AI推進法の解説", URL: "https://example.jp/ai"},
}

func samples() map[string]struct {
	name Name
	data any
} {
	type s = struct {
		name Name
		data any
	}
	return map[string]s{
		"coordinator_first": {Coordinator, CoordinatorData{Question: "What is the state of EU AI regulation?", Language: "en", Today: "2026-01-05", MayAsk: true}},
		"coordinator_followup_ja": {Coordinator, CoordinatorData{Question: "もっと短くして", Language: "ja", Today: "2026-01-05", HasReport: true,
			History: []Exchange{{Question: "2026年の国内生成AI規制の動向を調べて", Answer: "AI推進法が施行された。"}}}},
		"planner":            {Planner, PlannerData{Question: "EU AI Act timeline", Language: "en", Today: "2026-01-05", MaxSubtasks: 4, MaxQueries: 2, Feedback: "Focus on obligations for SMEs.", Known: []string{"The act entered into force in 2024."}}},
		"replan":             {Replan, ReplanData{Question: "EU AI Act timeline", Language: "en", Today: "2026-01-05", Theme: "EU AI Act", Feedback: "Penalties are missing.", Gaps: []string{"penalty amounts"}, PreviousQueries: []string{"EU AI Act timeline"}, MaxSubtasks: 2, MaxQueries: 2}},
		"select":             {Select, SelectData{Question: "EU AI Act timeline", Language: "en", Today: "2026-01-05", Subtask: "Penalties", Try: 2, MaxTries: 3, Advice: "Find the fine amounts.", PreviousQueries: []string{"AI Act penalties"}, Knowledge: []string{"Fines exist."}, Links: []Link{{N: 1, Title: "Fines", URL: "https://example.org/fines"}}, AllowVisit: true, AllowCoding: true, MaxQueries: 3}},
		"select_team_member": {Select, SelectData{Question: "EU AI Act timeline", Language: "en", Today: "2026-01-05", Subtask: "Penalties", Try: 2, MaxTries: 3, PreviousQueries: []string{"AI Act penalties official data"}, MaxQueries: 3, Strategy: "Prefer primary sources: official publications, statistics offices, regulators, the organisations concerned."}},
		"summarize":          {Summarize, SummarizeData{Question: "EU AI Act timeline", Subtask: "Penalties", Query: "AI Act fines", Language: "en", Pages: []Page{{N: 1, Title: "Fines", URL: "https://example.org/fines", Text: "Fines reach 7% of turnover."}}}},
		"answer":             {Answer, AnswerData{Question: "EU AI Act timeline", Subtask: "Penalties", Language: "en", Evidence: ev[:1], Computations: []string{"7% of 1e9 = 7e7"}}},
		"reflect":            {Reflect, ReflectData{Question: "EU AI Act timeline", Subtask: "Penalties", Language: "en", Answer: "Fines reach 7% [E1].", Try: 1, MaxTries: 3, Sources: 2, PreviousQueries: []string{"AI Act fines"}}},
		"answer_after_check": {Answer, AnswerData{Question: "EU AI Act timeline", Subtask: "Penalties", Language: "en", Evidence: ev[:1], Advice: "Search for the fine amounts."}},
		"writer_en":          {Writer, WriterData{Question: "EU AI Act timeline", Theme: "EU AI Act", Language: "en", Today: "2026-01-05", Points: []string{"Timeline", "Penalties"}, Evidence: ev[:1], Subtasks: []SubtaskAnswer{{Title: "Timeline", Answer: "In force 2025 [E1]."}}, Gaps: []string{"penalty amounts"}}},
		"writer_disagree":    {Writer, WriterData{Question: "EU AI Act fines", Theme: "EU AI Act", Language: "en", Today: "2026-01-05", Evidence: ev[:1], Disagreements: []string{`[E1] "Fines reach 35 million euros." (a.example) vs [E2] "Fines reach 30 million euros." (b.example)`}}},
		"writer_ja_rewrite":  {Writer, WriterData{Question: "2026年の国内生成AI規制の動向", Theme: "国内AI規制", Language: "ja", Today: "2026-01-05", Evidence: ev[1:], PreviousDraft: "# 旧版", Instruction: "もっと短くして", Feedback: "出典を増やす"}},
		"route":              {Route, RouteData{Question: "EU AI Act timeline", Language: "en", Decision: "The reviewer did not approve the draft. Is the objection about facts or about form?", Facts: []string{"Reviewer feedback: Penalty amounts are missing.", "Issue (missing/major): no fine amounts"}, RoundsLeft: 1}},
		"analyst":            {Analyst, AnalystData{Question: "Acme X1 vs Bolt B2 prices", Language: "en", Evidence: []Evidence{{N: 1, Claim: "The X1 costs $1,299.", Quote: "The Acme X1 costs $1,299 at launch.", Title: "Acme", URL: "https://acme.example/x1"}, {N: 3, Claim: "1 EUR = 1.08 USD.", Quote: "1 EUR = 1.08 USD on 1 March.", Title: "Rates", URL: "https://ecb.example/rates"}}}},
		"reviewer":           {Reviewer, ReviewerData{Question: "EU AI Act timeline", Language: "en", Today: "2026-01-05", Points: []string{"Timeline"}, Draft: "# Report", EvaluationTypes: []string{"freshness", "attribution"}, Citations: Citations{Cited: 3, Verified: 2, Dropped: 1}, Evidence: ev}},
	}
}

func TestGolden(t *testing.T) {
	seen := map[Name]bool{}
	for name, tc := range samples() {
		seen[tc.name] = true
		t.Run(name, func(t *testing.T) {
			p, err := Render(tc.name, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			got := "=== system\n" + p.System + "\n=== user\n" + p.User + "\n"
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./prompts -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (run with -update if intended)\n--- got\n%s", name, path, got)
			}
		})
	}
	for _, n := range Names {
		if !seen[n] {
			t.Errorf("prompt %s has no golden sample", n)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	if _, err := Render("nope", nil); err == nil {
		t.Error("unknown prompt rendered")
	}
	// A data value of the wrong type fails instead of rendering a partial prompt.
	if _, err := Render(Planner, ReflectData{}); err == nil {
		t.Error("wrong data type rendered")
	}
}

func TestNoTemplateLeftovers(t *testing.T) {
	for name, tc := range samples() {
		p, err := Render(tc.name, tc.data)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{p.System, p.User} {
			if strings.Contains(s, "<no value>") || strings.Contains(s, "{{") {
				t.Errorf("%s: leftover template text", name)
			}
		}
	}
}

// What a careful model found hard to follow (issue 24): each prompt says
// what it asks for.
func TestPromptsSayWhatTheyAsk(t *testing.T) {
	tests := []struct {
		name      string
		prompt    Name
		data      any
		want, not []string
	}{
		{"planner explains workspace when the workspace cannot be searched", Planner,
			PlannerData{Question: "q", Language: "en", Today: "2026-01-05", MaxSubtasks: 3, MaxQueries: 2},
			[]string{`"workspace": always false`}, nil},
		{"planner explains workspace when it can", Planner,
			PlannerData{Question: "q", Language: "en", Today: "2026-01-05", MaxSubtasks: 3, MaxQueries: 2, Workspace: true},
			[]string{`"workspace": true when`, "false otherwise"}, nil},
		{"replan explains workspace", Replan,
			ReplanData{Question: "q", Language: "en", Today: "2026-01-05", Theme: "t", MaxSubtasks: 2, MaxQueries: 2},
			[]string{`"workspace"`, "always false"}, nil},
		{"reviewer may accept", Reviewer,
			ReviewerData{Question: "q", Language: "en", Today: "2026-01-05", Draft: "# R"},
			[]string{`"accept" if the report passes`}, nil},
		{"summary length says markers do not count", Writer,
			WriterData{Question: "q", Theme: "t", Language: "en", Today: "2026-01-05"},
			[]string{"200-300 characters, not counting footnote markers"}, nil},
		{"writer keeps scheduled apart from happened", Writer,
			WriterData{Question: "q", Theme: "t", Language: "ja", Today: "2026-01-05"},
			[]string{"today is 2026-01-05", "scheduled", "has not happened yet"}, nil},
		{"answer after a failed check does not tell the model to search", Answer,
			AnswerData{Question: "q", Subtask: "s", Language: "en", Evidence: ev[:1], Advice: "Search for the fine amounts."},
			[]string{"you cannot search", "from the evidence below"}, []string{"Improve on the last attempt: Search"}},
		{"checker sees the earlier queries", Reflect,
			ReflectData{Question: "q", Subtask: "s", Language: "en", Answer: "a", Try: 1, MaxTries: 2, PreviousQueries: []string{"AI Act fines 2025"}},
			[]string{"Queries already run:\n- AI Act fines 2025", "different from the queries already run"}, nil},
		{"checker's advice may be empty", Reflect,
			ReflectData{Question: "q", Subtask: "s", Language: "en", Answer: "a", Try: 1, MaxTries: 2},
			[]string{"an empty string when completed"}, nil},
		{"summariser tolerates line breaks and asks for the claim's numbers", Summarize,
			SummarizeData{Question: "q", Subtask: "s", Query: "x", Language: "en"},
			[]string{"breaks a sentence across lines", "every number and date the claim states"}, []string{"sentence or phrase copied character for character"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Render(tt.prompt, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			all := p.System + "\n" + p.User
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("prompt lacks %q:\n%s", w, all)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(all, n) {
					t.Errorf("prompt still has %q", n)
				}
			}
		})
	}
}
