package agent

import (
	"strings"
	"testing"
)

func TestCrossCheck(t *testing.T) {
	f := func(id, url, claim string) Finding {
		return Finding{ID: id, URL: url, Claim: claim, Quote: claim, Verified: true, Kind: FindingSource}
	}
	for _, tc := range []struct {
		name                 string
		fs                   []Finding
		corroborated, differ int
	}{
		{"same figure, two sites", []Finding{
			f("a", "https://a.example/x", "The AI Office employs 140 people."),
			f("b", "https://www.b.example/y", "The AI Office employs 140 people in Brussels."),
		}, 1, 0},
		{"same figure, one site", []Finding{
			f("a", "https://a.example/x", "The AI Office employs 140 people."),
			f("b", "https://a.example/y", "The AI Office employs 140 people in Brussels."),
		}, 0, 0},
		{"different figures, two sites", []Finding{
			f("a", "https://a.example/x", "Fines under the AI Act reach 35 million euros."),
			f("b", "https://b.example/y", "Fines under the AI Act reach 30 million euros."),
		}, 0, 1},
		{"different years are not a disagreement", []Finding{
			f("a", "https://a.example/x", "In 2024, 13.5% of EU enterprises used artificial intelligence."),
			f("b", "https://b.example/y", "In 2023, 8% of EU enterprises used artificial intelligence."),
		}, 0, 0},
		{"a figure among the other's agrees", []Finding{
			f("a", "https://a.example/x", "Fines for prohibited practices reach 35 million euros or 7% of turnover."),
			f("b", "https://b.example/y", "Fines for prohibited practices reach 35 million euros."),
		}, 1, 0},
		{"unrelated statements", []Finding{
			f("a", "https://a.example/x", "The AI Office employs 140 people."),
			f("b", "https://b.example/y", "Fines under the AI Act reach 30 million euros."),
		}, 0, 0},
		{"Japanese", []Finding{
			f("a", "https://a.example/x", "国内企業の約4割が生成AIを業務で利用している。"),
			f("b", "https://b.example/y", "国内企業の約3割が生成AIを業務で利用している。"),
		}, 0, 1},
		{"a figure not in the quote is left out", []Finding{
			{ID: "a", URL: "https://a.example/x", Claim: "Fines reach 35 million euros under the AI Act.", Quote: "Fines are high under the AI Act.", Verified: true, Kind: FindingSource},
			f("b", "https://b.example/y", "Fines reach 30 million euros under the AI Act."),
		}, 0, 0},
	} {
		cc := crossCheck(tc.fs)
		if len(cc.Corroborated) != tc.corroborated || len(cc.Disagreements) != tc.differ {
			t.Errorf("%s: %+v; want %d corroborated, %d disagreements", tc.name, cc, tc.corroborated, tc.differ)
		}
	}
}

func TestWithCrossCheckReplacesItsSection(t *testing.T) {
	fs := []Finding{
		{ID: "a", URL: "https://a.example/x", Claim: "Fines reach 35 million euros under the AI Act.", Quote: "Fines reach 35 million euros under the AI Act.", Verified: true, Kind: FindingSource},
		{ID: "b", URL: "https://b.example/y", Claim: "Fines reach 30 million euros under the AI Act.", Quote: "Fines reach 30 million euros under the AI Act.", Verified: true, Kind: FindingSource},
	}
	ix := indexEvidence(fs)
	cc := crossCheck(fs)
	draft := "# R\n\n## Key Findings\n\n- x\n\n## References\n\n[^1]: y\n"
	once := withCrossCheck(draft, cc, ix, "en")
	twice := withCrossCheck(once, cc, ix, "en")
	if once != twice || strings.Count(twice, "## Cross-checked Claims") != 1 {
		t.Fatalf("section not replaced:\n%s", twice)
	}
	if !strings.Contains(once, "a.example says “Fines reach 35 million euros under the AI Act.” [E1]; b.example says “Fines reach 30 million euros under the AI Act.” [E2]") ||
		strings.Index(once, "## Cross-checked") > strings.Index(once, "## References") {
		t.Errorf("report:\n%s", once)
	}
	for _, m := range []int{1, 2, 3, 4} {
		if got := memberQueries([]string{"EU AI Act"}, m, "en"); m < MaxTeamSize && got[0] == "EU AI Act" {
			t.Errorf("member %d keeps the planned query", m)
		}
	}
}
