package citation

import (
	"strings"
	"testing"
)

const vacuumPage = `Routine Vacuuming

In PostgreSQL, an UPDATE or DELETE of a row does not immediately remove the old version of the row.
The standard form of VACUUM removes dead row versions in tables and indexes and marks the space
available for future reuse. However, it will not return the space to the operating system.
Analysts said "the cycle is lean by historical standards" in 2025.`

const jaPage = "２０２５年５月、ＡＩ推進法が成立した。\n本法には罰則規定は設けられていない。政府は基本計画を策定し、\n事業者に対しては協力を求める。ｶﾞｽ火力発電の比率は３割を下回った。"

func TestMatcherFind(t *testing.T) {
	for _, tc := range []struct {
		name, page, quote string
		want              string // the page's text kept; "" = not found
		exact             bool
	}{
		{"verbatim", vacuumPage, "does not immediately remove the old version of the row", "does not immediately remove the old version of the row", true},
		{"line break and case", vacuumPage, "MARKS THE SPACE AVAILABLE for future reuse", "marks the space available for future reuse", true},
		{"punctuation", vacuumPage, "In PostgreSQL an UPDATE or DELETE of a row does not immediately remove", "In PostgreSQL, an UPDATE or DELETE of a row does not immediately remove", false},
		{"ellipsis", vacuumPage, "The standard form of VACUUM … for future reuse", "The standard form of VACUUM … for future reuse", true},
		{"three dots", vacuumPage, "The standard form of VACUUM...marks the space", "The standard form of VACUUM … marks the space", true},
		{"one word changed", vacuumPage, "The standard form of VACUUM deletes dead row versions in tables and indexes", "The standard form of VACUUM removes dead row versions in tables and indexes", false},
		{"one word missing", vacuumPage, "The standard form of VACUUM removes dead versions in tables and indexes", "The standard form of VACUUM removes dead row versions in tables and indexes", false},
		{"first word missing on the page", vacuumPage, "VACUUM removes dead row versions in tables and indexes", "VACUUM removes dead row versions in tables and indexes", true},
		{"starts inside a quotation", vacuumPage, "the cycle is lean by historical standards in 2025", "the cycle is lean by historical standards\" in 2025", true},
		{"full width", jaPage, "2025年5月、AI推進法が成立した", "２０２５年５月、ＡＩ推進法が成立した", true},
		{"half-width kana", jaPage, "ガス火力発電の比率は3割を下回った", "ｶﾞｽ火力発電の比率は３割を下回った", true},
		{"ja line break, no comma", jaPage, "政府は基本計画を策定し事業者に対しては協力を求める", "政府は基本計画を策定し、事業者に対しては協力を求める", false},
		{"control characters of the page", "Intro.\nThe \x1bregulation\u202e entered into force\x07 on 1 August 2024.", "the regulation entered into force, on 1 August 2024", "The regulation entered into force on 1 August 2024", false},
		{"number changed", vacuumPage, "Analysts said the cycle is lean by historical standards in 2024", "", false},
		{"negation dropped", vacuumPage, "However, it will return the space to the operating system", "", false},
		{"negation added", vacuumPage, "an UPDATE or DELETE of a row does immediately remove the old version", "", false},
		{"ja negation flipped", jaPage, "本法には罰則規定が設けられている", "", false},
		{"ja number changed", jaPage, "２０２４年５月、ＡＩ推進法が成立した", "", false},
		{"ja other words", jaPage, "政府は基本計画を廃止し、事業者に罰金を科す", "", false},
		{"invented", vacuumPage, "VACUUM FULL rewrites the whole table and returns space", "", false},
		{"order of parts", vacuumPage, "for future reuse … The standard form of VACUUM", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := NewMatcher().Find(Doc{URL: "u", Text: tc.page}, tc.quote)
			if tc.want == "" {
				if ok {
					t.Fatalf("Find(%q) = %q, want no match", tc.quote, m.Quote)
				}
				return
			}
			if !ok {
				t.Fatalf("Find(%q): no match, want %q", tc.quote, tc.want)
			}
			want := balanceQuotes(tc.want)
			if m.Quote != want || m.Exact != tc.exact {
				t.Errorf("Find(%q) = %q exact=%v, want %q exact=%v", tc.quote, m.Quote, m.Exact, want, tc.exact)
			}
		})
	}
}

// longPage is a page of about 40,000 characters, the most the agent keeps.
func longPage() string {
	var b strings.Builder
	words := strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more")
	for i := 0; b.Len() < 40000; i++ {
		b.WriteString(words[(i*7+i/13)%len(words)])
		if i%17 == 16 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString("The regulation entered into force on 1 August 2024, with obligations phased in over two years. ")
	return b.String()
}

func BenchmarkFindLongPage(b *testing.B) {
	page := longPage()
	for _, bc := range []struct{ name, quote string }{
		{"exact", "The regulation entered into force on 1 August 2024"},
		{"near", "the regulation came into force on 1 August 2024 with obligations phased in"},
		{"fabricated", "the commission repealed the regulation in 2025 after a long debate"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			doc := Doc{URL: "u", Text: page}
			m := NewMatcher()
			m.Find(doc, bc.quote) // index the page once, as a check does
			b.ResetTimer()
			for b.Loop() {
				m.Find(doc, bc.quote)
			}
		})
	}
}

func BenchmarkIndexLongPage(b *testing.B) {
	page := longPage()
	for b.Loop() {
		newPageIndex(page)
	}
}
