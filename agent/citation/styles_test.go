package citation

import (
	"strings"
	"testing"
)

var styleDocs = map[string]Doc{
	"https://x.org/vacuum": {URL: "https://x.org/vacuum", Title: "Routine Vacuuming", Text: vacuumPage},
	"https://x.jp/law":     {URL: "https://x.jp/law", Title: "AI推進法", Text: jaPage},
}

func styleLookup(u string) (Doc, bool) {
	d, ok := styleDocs[u]
	return d, ok
}

// TestCheckStyles runs reports that cite in the styles models use and
// checks what the report becomes.
func TestCheckStyles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		verified int
		dropped  int
		want     []string // in the output
		not      []string // not in the output
	}{
		{
			name:     "straight quote before the marker",
			in:       "VACUUM \"does not immediately remove the old version of the row\"[^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n",
			verified: 1,
			want:     []string{"VACUUM \"does not immediately remove the old version of the row\"[^1].", "[^1]: \"does not immediately remove the old version of the row\" — Routine Vacuuming, https://x.org/vacuum"},
		},
		{
			name:     "curly quote, space and period before the marker",
			in:       "VACUUM “removes dead row versions in tables and indexes”. [^a]\n\n[^a]: Routine Vacuuming — https://x.org/vacuum\n",
			verified: 1,
			want:     []string{"indexes”. [^1]", "[^1]: \"removes dead row versions in tables and indexes\" — Routine Vacuuming, https://x.org/vacuum"},
		},
		{
			name:     "Japanese brackets",
			in:       "法律は「本法には罰則規定は設けられていない」[^1]とし、『政府は基本計画を策定し』[^2]。\n\n[^1]: AI推進法, https://x.jp/law\n[^2]: AI推進法、https://x.jp/law\n",
			verified: 2,
			want:     []string{"「本法には罰則規定は設けられていない」[^1]とし、『政府は基本計画を策定し』[^2]。", "[^1]: 「本法には罰則規定は設けられていない」 — AI推進法, https://x.jp/law"},
		},
		{
			name:     "quote in the footnote after the URL",
			in:       "Old rows stay [^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum, \"does not immediately remove the old version of the row\"\n",
			verified: 1,
			want:     []string{"Old rows stay [^1].", "[^1]: Routine Vacuuming, https://x.org/vacuum, \"does not immediately remove"},
		},
		{
			name:     "numbered references",
			in:       "VACUUM \"marks the space available for future reuse\" [1], [2].\n\n## Sources\n\n[1] Routine Vacuuming https://x.org/vacuum\n[2] Other, https://x.org/unread\n",
			verified: 1, dropped: 1,
			want: []string{"future reuse\" [^1].", "[^1]: \"marks the space available for future reuse\" — Routine Vacuuming, https://x.org/vacuum"},
			not:  []string{"[1]", "[2]", "unread"},
		},
		{
			name:     "numbered list of references",
			in:       "VACUUM \"marks the space available for future reuse\" [1].\n\n## References\n\n1. Routine Vacuuming - https://x.org/vacuum\n",
			verified: 1,
			want:     []string{"future reuse\" [^1].", "[^1]: \"marks the space"},
			not:      []string{"1. Routine"},
		},
		{
			name: "a numbered list that is not references",
			in:   "Steps:\n\n1. Run VACUUM\n2. See https://x.org/vacuum\n\nArrays use a[1] and a[2].\n",
			want: []string{"1. Run VACUUM\n2. See https://x.org/vacuum", "a[1] and a[2]."},
			not:  []string{"[^"},
		},
		{
			name:     "markdown link in parentheses",
			in:       "VACUUM \"marks the space available for future reuse\" ([Routine Vacuuming](https://x.org/vacuum)). See also [the docs](https://x.org/other).\n",
			verified: 1,
			want:     []string{"future reuse\"[^1]. See also [the docs](https://x.org/other).", "[^1]: \"marks the space available for future reuse\" — Routine Vacuuming, https://x.org/vacuum"},
		},
		{
			name:     "markdown link after the quote",
			in:       "VACUUM \"marks the space available for future reuse\" [Routine Vacuuming](https://x.org/vacuum).\n",
			verified: 1,
			want:     []string{"future reuse\"[^1].", "[^1]: \"marks the space"},
		},
		{
			name:     "near-miss quote repaired to the page's text",
			in:       "VACUUM \"removes dead versions in tables and indexes and marks the space available for future use\"[^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n",
			verified: 1,
			want:     []string{"\"removes dead row versions in tables and indexes and marks the space available for future reuse\"[^1]."},
			not:      []string{"dead versions", "future use"},
		},
		{
			name:    "fabricated quote loses its quotation marks",
			in:      "VACUUM \"returns all freed space to the operating system\"[^1]. It is \"lean\" [^2].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n[^2]: Routine Vacuuming, https://x.org/vacuum\n",
			dropped: 2,
			want:    []string{"VACUUM returns all freed space to the operating system (unverified). It is \"lean\" (unverified)."},
			not:     []string{"[^", "References"},
		},
		{
			name:    "fabricated Japanese quote",
			in:      "法律は「本法には罰則規定が設けられている」[^1]。\n\n[^1]: AI推進法, https://x.jp/law\n",
			dropped: 1,
			want:    []string{"法律は本法には罰則規定が設けられている（未検証）。"},
		},
		{
			name:     "same footnote, one quote found and one not",
			in:       "A \"does not immediately remove the old version of the row\"[^1]. B \"removes every row at once\"[^1]. C [^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n",
			verified: 2, dropped: 1,
			want: []string{"A \"does not immediately remove the old version of the row\"[^1]. B removes every row at once (unverified). C [^1]."},
		},
		{
			name:     "co-cited footnote keeps its own quote",
			in:       "A \"does not immediately remove the old version of the row\"[^1][^2].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n[^2]: \"本法には罰則規定は設けられていない\" — AI推進法, https://x.jp/law\n",
			verified: 2,
			want:     []string{"row\"[^1][^2].", "[^2]: \"本法には罰則規定は設けられていない\" — AI推進法, https://x.jp/law"},
		},
		{
			name:     "attribution between the quote and the marker",
			in:       "\"An UPDATE or DELETE of a row does not immediately remove the old version,\" the manual says[^1]. 法律は「本法には罰則規定は設けられていない」と定める[^2]。\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n[^2]: AI推進法, https://x.jp/law\n",
			verified: 2,
			want:     []string{"the manual says[^1].", "と定める[^2]。", "[^2]: \"本法には罰則規定は設けられていない\" — AI推進法"},
		},
		{
			name:    "a quoted term is not the quote of a later claim",
			in:      "The \"Routine Vacuuming\" page explains that tables shrink[^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n",
			dropped: 1,
			want:    []string{"The \"Routine Vacuuming\" page explains that tables shrink (unverified)."},
		},
		{
			name:     "quoted title before the marker, quote in the footnote",
			in:       "The guide \"Routine Vacuuming Explained\"[^1] says old rows stay.\n\n[^1]: \"does not immediately remove the old version of the row\" — Routine Vacuuming, https://x.org/vacuum\n",
			verified: 1, dropped: 1,
			want: []string{"The guide Routine Vacuuming Explained[^1] says old rows stay.", "[^1]: \"does not immediately remove the old version of the row\" — Routine Vacuuming, https://x.org/vacuum"},
			not:  []string{"unverified"},
		},
		{
			name:    "flag mode keeps the quote",
			in:      "VACUUM \"returns all freed space to the operating system\"[^1].\n\n[^1]: Routine Vacuuming, https://x.org/vacuum\n",
			dropped: 1,
			want:    []string{"VACUUM \"returns all freed space to the operating system\"[^1].", "(unverified: quote_not_found)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{}
			if strings.HasPrefix(tc.name, "flag") {
				opts.Mode = Flag
			}
			out, rep := Check(tc.in, styleLookup, opts)
			if rep.Verified != tc.verified || rep.Dropped != tc.dropped {
				t.Errorf("verified %d dropped %d, want %d and %d: %+v", rep.Verified, rep.Dropped, tc.verified, tc.dropped, rep.Footnotes)
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
		})
	}
}
