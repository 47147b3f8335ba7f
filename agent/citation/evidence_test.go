package citation

import (
	"strings"
	"testing"
)

// evidenceOf is the evidence of the run the tests cite by id.
func testEvidence(n int) (Evidence, bool) {
	ev := map[int]Evidence{
		3:  {Quote: "does not immediately remove the old version of the row", Title: "Routine Vacuuming", URL: "https://x.org/vacuum"},
		12: {Quote: "本法には罰則規定は設けられていない", Title: "AI推進法", URL: "https://x.jp/law"},
		// given out, but its page was not read: the check still decides
		20: {Quote: "anything", Title: "Elsewhere", URL: "https://x.org/unread"},
	}
	e, ok := ev[n]
	return e, ok
}

// TestCheckEvidenceIDs checks citations by evidence id: the footnote is
// written from the evidence record whatever the model wrote, an id the run
// never gave out is dropped and counted, and a paraphrased inline quote
// loses its quotation marks while the claim keeps its evidence.
func TestCheckEvidenceIDs(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		in                       string
		cited, verified, dropped int
		unknown                  int
		want, not                []string
	}{
		{
			name:  "bare ids",
			in:    "Old rows stay until vacuumed [E3]. The law has no penalties [E12][E3].\n",
			cited: 2, verified: 2,
			want: []string{"vacuumed [^1].", "penalties [^2][^1].",
				"[^1]: \"does not immediately remove the old version of the row\" — Routine Vacuuming, https://x.org/vacuum",
				"[^2]: \"本法には罰則規定は設けられていない\" — AI推進法, https://x.jp/law"},
		},
		{
			name:  "a list of ids, full-width brackets, lower case",
			in:    "Old rows stay [E3, E12]. No penalties【E12】 (e3).\n",
			cited: 2, verified: 2,
			want: []string{"Old rows stay [^1][^2].", "No penalties[^2][^1]."},
		},
		{
			name:  "unknown id",
			in:    "Old rows stay [E3]. A made-up fact [E99].\n",
			cited: 2, verified: 1, dropped: 1, unknown: 1,
			want: []string{"A made-up fact (unverified)."},
			not:  []string{"E99", "[^2]"},
		},
		{
			name:  "a footnote naming an id, its quote and URL wrong",
			in:    "Old rows stay [^1].\n\n## References\n\n[^1]: [E3] \"old rows are removed later\" — Vacuum, https://x.org/wrong\n",
			cited: 1, verified: 1,
			want: []string{"Old rows stay [^1].", "[^1]: \"does not immediately remove the old version of the row\" — Routine Vacuuming, https://x.org/vacuum"},
			not:  []string{"wrong", "removed later"},
		},
		{
			name:  "a footnote labelled by id",
			in:    "Old rows stay [^E3].\n\n[^E3]: Routine Vacuuming\n",
			cited: 1, verified: 1,
			want: []string{"Old rows stay [^1].", "[^1]: \"does not immediately remove"},
		},
		{
			name:  "an inline quote that is exact is kept",
			in:    "VACUUM \"does not immediately remove the old version of the row\" [E3].\n",
			cited: 1, verified: 1,
			want: []string{"VACUUM \"does not immediately remove the old version of the row\" [^1]."},
		},
		{
			name:  "an inline paraphrase loses its quotation marks, the claim keeps the evidence",
			in:    "VACUUM \"never deletes the old row right away\" [E3].\n",
			cited: 1, verified: 1,
			want: []string{"VACUUM never deletes the old row right away [^1].", "[^1]: \"does not immediately remove"},
			not:  []string{"\"never deletes"},
		},
		{
			name:  "evidence whose page was not read",
			in:    "Something [E20].\n",
			cited: 1, dropped: 1,
			want: []string{"Something (unverified)."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep := Check(tc.in, styleLookup, Options{Evidence: testEvidence})
			unknown := 0
			for _, f := range rep.Footnotes {
				if f.Status == UnknownEvidence {
					unknown++
				}
			}
			if rep.Cited != tc.cited || rep.Verified != tc.verified || rep.Dropped != tc.dropped || unknown != tc.unknown {
				t.Errorf("cited %d verified %d dropped %d unknown %d, want %d %d %d %d\n%+v", rep.Cited, rep.Verified, rep.Dropped, unknown,
					tc.cited, tc.verified, tc.dropped, tc.unknown, rep.Footnotes)
			}
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
			// the checked report checks the same again
			if again, rep2 := Check(out, styleLookup, Options{Evidence: testEvidence}); again != out || rep2.Dropped != 0 {
				t.Errorf("second check differs (dropped %d):\n%s\n---\n%s", rep2.Dropped, out, again)
			}
		})
	}
}

// TestCheckEvidenceIDsWithoutEvidence: without the run's evidence an id is
// text, as before.
func TestCheckEvidenceIDsWithoutEvidence(t *testing.T) {
	out, rep := Check("Old rows stay [E3].\n", styleLookup, Options{})
	if rep.Cited != 0 || !strings.Contains(out, "[E3]") {
		t.Errorf("got %+v:\n%s", rep, out)
	}
}

// TestCheckCitesCanonicalURL: a footnote that cites a page under an alias
// (the lookup finds the page by it) is written under the page's own URL.
func TestCheckCitesCanonicalURL(t *testing.T) {
	look := func(u string) (Doc, bool) {
		if u == "https://x.org/go/vacuum" {
			u = "https://x.org/vacuum"
		}
		return styleLookup(u)
	}
	in := "Old rows stay [^1]. Space is reused [^2].\n\n[^1]: \"does not immediately remove the old version of the row\" — Vacuum, https://x.org/go/vacuum\n" +
		"[^2]: \"does not immediately remove the old version of the row\" — Vacuum, https://x.org/vacuum\n"
	out, rep := Check(in, look, Options{})
	if rep.Verified != 2 || strings.Contains(out, "/go/") || !strings.Contains(out, "Old rows stay [^1]. Space is reused [^1].") {
		t.Errorf("%+v\n%s", rep, out)
	}
}

// TestRestated: a quote the page does not have stands for the evidence it
// restates where the words tell (a researcher's claim, passages merged, a
// translation), never for evidence it contradicts or goes beyond, and not
// for a paraphrase in the page's language, which a near copy with one fact
// changed looks like.
func TestRestated(t *testing.T) {
	doc := Doc{URL: "https://eu.example.org/ai-act", Text: "Most high-risk obligations apply from 2 August 2026. Fines for the most serious\n" +
		"infringements can reach €35 million or 7% of worldwide annual turnover, whichever is higher."}
	ev := []Evidence{
		{Quote: "Fines for the most serious infringements can reach €35 million or 7% of worldwide annual turnover, whichever is higher.", Claim: "違反の制裁金は最大3500万ユーロまたは世界売上高の7%に達する。"},
		{Quote: "Most high-risk obligations apply from 2 August 2026.", Claim: "High-risk obligations apply from August 2026."},
	}
	for _, tc := range []struct {
		written string
		want    int // index in ev, -1 for none
	}{
		{"High-risk obligations apply from August 2026", 1}, // the researcher's claim
		{"most high-risk obligations apply from 2 August 2026, and infringements can reach €35 million or 7% of worldwide annual turnover", 1}, // merged
		{"制裁金は世界売上高の7%または3500万ユーロに達する", 0},                                                                                                     // a translation
		{"serious infringements may be fined up to €35 million or 7% of annual worldwide turnover", -1},                                        // a paraphrase
		{"制裁金は世界売上高の9%または5000万ユーロに達する", -1},                                                                                                    // numbers it lacks
		{"制裁金は世界売上高の7%または3500万ユーロに達しない", -1},                                                                                                   // turned around
		{"most high-risk obligations apply from 2 August 2026, and the act will be repealed next year", -1},
		{"High-risk obligations apply from August 2027", -1},
	} {
		e, ok := restated(NewMatcher(), doc, tc.written, ev)
		got := -1
		for i := range ev {
			if ok && e.Quote == ev[i].Quote {
				got = i
			}
		}
		if got != tc.want {
			t.Errorf("restated(%q) = %d, want %d", tc.written, got, tc.want)
		}
	}
}
