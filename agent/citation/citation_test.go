package citation

import (
	"strings"
	"testing"
)

var docs = map[string]Doc{
	"https://example.org/a": {URL: "https://example.org/a", Title: "Page A", Text: "Intro.\nThe regulation entered into force\non 1 August 2024, with obligations phased in over two years. More text."},
	"https://example.jp/b":  {URL: "https://example.jp/b", Title: "ページB", Text: "２０２５年５月、ＡＩ推進法が成立した。\n本法には罰則規定は設けられていない。"},
}

func lookup(u string) (Doc, bool) {
	d, ok := docs[u]
	return d, ok
}

func TestCheck(t *testing.T) {
	in := `# Report

## Key Findings

- The act entered into force in 2024 [^a]. A fabricated source says more [^x].
- A fabricated quote [^q]; a Japanese fact[^j]. Another claim [^nq].
- Dangling marker [^zz].

## References

[^a]: "The regulation entered into force on 1 August 2024" — Page A, https://example.org/a
[^x]: "Anything at all here" — Made up, https://fabricated.example/page
[^q]: "The regulation was repealed in 2025" — Page A, https://example.org/a
[^j]: 「2025年5月、AI推進法が成立した。」 — ページB, https://example.jp/b
[^nq]: Page A, https://example.org/a
[^unused]: "with obligations phased in over two years" — Page A, https://example.org/a
`
	out, rep := Check(in, lookup, Options{})
	if rep.Cited != 6 || rep.Verified != 2 || rep.Dropped != 4 {
		t.Fatalf("report = %+v", rep)
	}
	want := map[string]Status{"a": Verified, "x": NotRetrieved, "q": QuoteNotFound, "j": Verified, "nq": NoQuote, "zz": Undefined, "unused": Unused}
	for _, f := range rep.Footnotes {
		if want[f.Label] != f.Status {
			t.Errorf("footnote %s: %s, want %s", f.Label, f.Status, want[f.Label])
		}
	}
	for _, s := range []string{
		"in 2024 [^1]. A fabricated source says more (unverified).",
		"A fabricated quote (unverified); a Japanese fact[^2]. Another claim (unverified).",
		"- Dangling marker (unverified).",
		"[^1]: \"The regulation entered into force on 1 August 2024\" — Page A, https://example.org/a",
		"[^2]: 「2025年5月、AI推進法が成立した。」 — ページB, https://example.jp/b",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"fabricated.example", "repealed", "[^3]", "[^unused]", "[^a]"} {
		if strings.Contains(out, s) {
			t.Errorf("output still has %q:\n%s", s, out)
		}
	}
	if strings.Count(out, "## References") != 1 {
		t.Errorf("references heading count:\n%s", out)
	}
}

func TestCheckFlag(t *testing.T) {
	in := "Claim [^1]. Other [^2].\n\n[^1]: \"The regulation entered into force\" — A, https://example.org/a\n[^2]: \"not in the page at all\" — A, https://example.org/a\n"
	out, rep := Check(in, lookup, Options{Mode: Flag})
	if rep.Verified != 1 || rep.Dropped != 1 {
		t.Fatalf("%+v", rep)
	}
	if !strings.Contains(out, "Other [^2].") || !strings.Contains(out, "(unverified: quote_not_found)") {
		t.Errorf("flag mode output:\n%s", out)
	}
}

func TestRenumberByFirstUse(t *testing.T) {
	in := "B first [^7], then A [^3], B again [^7].\n\n[^3]: \"obligations phased in over two years\" — A, https://example.org/a\n[^7]: \"本法には罰則規定は設けられていない\" — B, https://example.jp/b\n"
	out, rep := Check(in, lookup, Options{})
	if rep.Verified != 2 {
		t.Fatalf("%+v", rep)
	}
	if !strings.HasPrefix(out, "B first [^1], then A [^2], B again [^1].") {
		t.Errorf("renumbering:\n%s", out)
	}
	if i, j := strings.Index(out, "[^1]: \"本法"), strings.Index(out, "[^2]: \"obligations"); i < 0 || j < i {
		t.Errorf("definitions order:\n%s", out)
	}
}

func TestContains(t *testing.T) {
	norm := Normalize(docs["https://example.org/a"].Text + docs["https://example.jp/b"].Text)
	for _, tc := range []struct {
		quote string
		want  bool
	}{
		{"The regulation entered into force on 1 August 2024", true},
		{"the REGULATION entered   into force", true},                 // case and spacing
		{"“entered into force on 1 August 2024”", true},               // curly quotes inside
		{"entered into force … over two years", true},                 // ellipsis
		{"over two years … entered into force", false},                // order matters
		{"2025年5月、AI推進法が成立した", true},                                  // NFKC full-width digits/letters
		{"本法には 罰則規定は\n設けられていない", true},                                // Japanese with stray spaces
		{"本法には罰則規定が設けられている", false},                                   // altered
		{"The regulation entered into force on 2 August 2024", false}, // altered date
	} {
		if got := Contains(norm, tc.quote); got != tc.want {
			t.Errorf("Contains(%q) = %v, want %v", tc.quote, got, tc.want)
		}
	}
}

func TestShortQuote(t *testing.T) {
	in := "X [^1].\n\n[^1]: \"2024\" — A, https://example.org/a\n"
	_, rep := Check(in, lookup, Options{})
	if rep.Footnotes[0].Status != QuoteTooShort {
		t.Errorf("%+v", rep.Footnotes)
	}
}

func TestParseDef(t *testing.T) {
	for _, tc := range []struct{ in, q, title, url string }{
		{`"a quote" — Title, https://x.org/p`, "a quote", "Title", "https://x.org/p"},
		{`“curly” – T, <https://x.org/p>.`, "curly", "T", "https://x.org/p"},
		{`「引用」 — 題名、doc://notes/a.md#2`, "引用", "題名", "doc://notes/a.md#2"},
		{`https://x.org/only`, "", "", "https://x.org/only"},
		{`"say \"hi\" twice" — T, https://x.org`, `say \"hi\" twice`, "T", "https://x.org"},
	} {
		q, title, u := parseDef(tc.in)
		if q != tc.q || title != tc.title || u != tc.url {
			t.Errorf("parseDef(%q) = %q, %q, %q", tc.in, q, title, u)
		}
	}
}

func TestCodeFenceIgnored(t *testing.T) {
	in := "Text [^1].\n\n```\n[^9]: not a footnote\n```\n\n[^1]: \"The regulation entered into force\" — A, https://example.org/a\n"
	out, rep := Check(in, lookup, Options{})
	if rep.Verified != 1 || !strings.Contains(out, "[^9]: not a footnote") {
		t.Errorf("%+v\n%s", rep, out)
	}
}
