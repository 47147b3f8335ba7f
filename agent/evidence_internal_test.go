package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestAnswerStatements(t *testing.T) {
	local := []string{"f1", "f2", "f3"}
	for _, tc := range []struct {
		name, answer string
		want         []Statement
	}{
		{"tags after the sentence end", "Fines are high [E2]. The act applies in 2026. [E1][E3]",
			[]Statement{{"Fines are high.", []string{"f2"}}, {"The act applies in 2026.", []string{"f1", "f3"}}}},
		{"a mini-report", "## Answer\n\n1. **Fines** are high [E2][^1] (see [the page](https://x.org/p)).\n\n## References\n\n[^1]: \"q\" — T, https://x.org/p\n",
			[]Statement{{"Fines are high (see the page).", []string{"f2"}}}},
		{"a tag never given out, a list of tags", "It is so [E9, E1]。日本語の文[E3]。",
			[]Statement{{"It is so。", []string{"f1"}}, {"日本語の文。", []string{"f3"}}}},
		{"quotation marks go", "The page says \"fines are high\" [E2].", []Statement{{"The page says fines are high.", []string{"f2"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answerStatements(tc.answer, local)
			if !slices.EqualFunc(got, tc.want, func(a, b Statement) bool { return a.Text == b.Text && slices.Equal(a.Evidence, b.Evidence) }) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCiteByIDPreviousDraft: a checked draft goes back to the writer with
// its footnotes as evidence ids, so a revision cites by id too; a footnote
// that is no evidence stays.
func TestCiteByIDPreviousDraft(t *testing.T) {
	ix := indexEvidence([]Finding{
		{ID: "a", URL: "https://x.org/a", Quote: "Fines can reach 35 million euros.", Verified: true},
		{ID: "b", URL: "https://x.org/b", Quote: "本法には罰則規定は設けられていない。", Verified: true},
	})
	draft := "# R\n\nFines are high [^1]. No penalties[^2]. Other [^3].\n\n## References\n\n" +
		"[^1]: \"Fines can reach 35 million euros.\" — Fines, https://x.org/a\n" +
		"[^2]: 「本法には罰則規定は設けられていない。」 — 法, https://x.org/b\n" +
		"[^3]: \"Something else entirely here.\" — Other, https://x.org/c\n"
	got := citeByID(draft, ix)
	for _, s := range []string{"Fines are high [E1]. No penalties[E2]. Other [^3].", "[^3]: \"Something else"} {
		if !strings.Contains(got, s) {
			t.Errorf("lacks %q:\n%s", s, got)
		}
	}
	if strings.Contains(got, "[^1]") || strings.Contains(got, "x.org/a") {
		t.Errorf("footnote 1 left:\n%s", got)
	}
}

// TestMergeSourcesOnePage: two researchers that read one page under two
// URLs (an alias, the same text) leave one source with the other URL as an
// alias, which the citation check still finds.
func TestMergeSourcesOnePage(t *testing.T) {
	text := strings.Repeat("The same article text, long enough to be told apart. ", 6)
	old := map[string]Source{"https://a.org/x": {URL: "https://a.org/x", Text: text, Retrieved: true, Digest: textKey(text), Aliases: []string{"https://a.org/go/1"}}}
	got := mergeSources(old, map[string]Source{
		"https://a.org/go/1":   {URL: "https://a.org/go/1"}, // seen in results under the alias
		"https://mirror.org/x": {URL: "https://mirror.org/x", Text: text, Retrieved: true, Digest: textKey(text)},
		"https://b.org/y":      {URL: "https://b.org/y", Text: "other", Retrieved: true},
	})
	if len(got) != 2 || !slices.Contains(got["https://a.org/x"].Aliases, "https://mirror.org/x") {
		t.Fatalf("%+v", got)
	}
	doc, ok := lookup(got)("https://mirror.org/x")
	if !ok || doc.URL != "https://a.org/x" {
		t.Errorf("lookup by the alias: %+v %v", doc, ok)
	}
}

func TestCanonicalURL(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		pg   Page
		want string
	}{
		{"https://a.org/go/1", Page{FinalURL: "https://a.org/x"}, "https://a.org/x"},
		{"https://a.org/amp/x", Page{FinalURL: "https://a.org/amp/x", Canonical: "https://www.a.org/x"}, "https://www.a.org/x"},
		{"https://a.org/x", Page{Canonical: "https://b.org/x"}, "https://a.org/x"}, // another site
	} {
		if got := canonicalURL(tc.raw, tc.pg); got != normURL(tc.want) {
			t.Errorf("canonicalURL(%s, %+v) = %s, want %s", tc.raw, tc.pg, got, tc.want)
		}
	}
}

// TestCheckDraftResearcherStatement: a writer that quotes a researcher's
// statement, with the URL of the evidence the statement is tagged with,
// keeps its citation (the footnote quotes the evidence); a quote of a
// statement tagged with evidence of another page does not.
func TestCheckDraftResearcherStatement(t *testing.T) {
	page := "Most high-risk obligations apply from 2 August 2026. Fines for the most serious infringements can reach €35 million."
	f := Finding{ID: "a", URL: "https://x.org/a", Title: "Timeline", Quote: "Most high-risk obligations apply from 2 August 2026.", Claim: "High-risk rules apply in 2026.", Verified: true, Kind: FindingSource}
	s := State{Turn: 1, Findings: []Finding{f},
		Sources: map[string]Source{"https://x.org/a": {URL: "https://x.org/a", Title: "Timeline", Text: page, Retrieved: true},
			"https://x.org/b": {URL: "https://x.org/b", Title: "Other", Text: "Unrelated text about something else entirely.", Retrieved: true}},
		Results: []SubtaskResult{{Turn: 1, Title: "Timeline", Statements: []Statement{{Text: "Obligations for high-risk systems only start to bite in August 2026.", Evidence: []string{"a"}}}}},
	}
	draft := "- \"Obligations for high-risk systems only start to bite in August 2026\"[^1].\n" +
		"- \"Obligations for high-risk systems only start to bite in August 2026\"[^2].\n\n" +
		"[^1]: Timeline, https://x.org/a\n[^2]: Other, https://x.org/b\n"
	out, rep := checkDraft(draft, s, indexEvidence(s.Findings), 0)
	if rep.Verified != 1 || rep.Footnotes[0].Status != "verified" || !strings.Contains(out, "[^1]: \"Most high-risk obligations apply from 2 August 2026.\" — Timeline, https://x.org/a") {
		t.Errorf("%+v\n%s", rep, out)
	}
}
