package citation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// foldedIn reports whether every part of a kept quote (parts joined by
// an ellipsis) is, in letters and digits, a contiguous passage of the page.
func foldedIn(page, quote string) bool {
	pf := string(fold(page).r)
	for _, part := range splitEllipsis(quote) {
		if !strings.Contains(pf, string(fold(part).r)) {
			return false
		}
	}
	return true
}

// FuzzFind checks that a match is always text of the page, with the
// quote's numbers.
func FuzzFind(f *testing.F) {
	f.Add(vacuumPage, "The standard form of VACUUM deletes dead row versions in tables and indexes")
	f.Add(jaPage, "政府は基本計画を策定し事業者に対しては協力を求める")
	f.Add(jaPage, "本法には罰則規定が設けられている")
	f.Add("a b c d e f g", "a … g")
	f.Fuzz(func(t *testing.T, page, quote string) {
		m, ok := NewMatcher().Find(Doc{URL: "u", Text: page}, quote)
		if !ok {
			return
		}
		if !foldedIn(page, m.Quote) {
			t.Fatalf("match %q of %q is not on the page %q", m.Quote, quote, page)
		}
		if q, k := digitRuns(fold(quote).r), digitRuns(fold(m.Quote).r); !slices.Equal(q, k) {
			t.Fatalf("match %q changed the numbers of %q", m.Quote, quote)
		}
	})
}

// FuzzCheck checks the report a check returns: counts add up, and every
// citation kept quotes the page it names.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err == nil {
			if _, after, ok := strings.Cut(string(data), "-- report --\n"); ok {
				report, _, _ := strings.Cut(after, "-- expect --")
				f.Add(report, vacuumPage)
			}
		}
	}
	f.Add("Claim \"does not immediately remove\"[^1] [1].\n\n[^1]: T, https://f.example/p\n\n## Sources\n\n[1] T https://f.example/p\n", vacuumPage)
	docs := corpusDocs(f)
	f.Fuzz(func(t *testing.T, report, page string) {
		look := func(u string) (Doc, bool) {
			if u == "https://f.example/p" {
				return Doc{URL: u, Title: "Fuzz", Text: page}, true
			}
			d, ok := docs[u]
			return d, ok
		}
		_, rep := Check(report, look, Options{})
		if rep.Verified+rep.Dropped != rep.Cited || rep.Repaired > rep.Verified {
			t.Fatalf("counts do not add up: %+v", rep)
		}
		for _, fn := range rep.Footnotes {
			if fn.Status != Verified || fn.Quote == "" {
				continue
			}
			d, ok := look(fn.URL)
			if !ok || !foldedIn(d.Text, fn.Quote) {
				t.Fatalf("kept citation %+v does not quote its page", fn)
			}
		}
	})
}
