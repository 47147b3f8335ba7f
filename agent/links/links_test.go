package links

import (
	"net/url"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// rendered is a link as a markdown renderer (goldmark with GitHub's
// extensions: autolinked bare addresses, footnotes) sees it.
type rendered struct {
	kind, dest, text string
}

// renderedLinks parses md as GitHub-flavoured markdown and returns its
// links, images, autolinks and raw HTML (which may hold links of its own).
func renderedLinks(t *testing.T, md string) []rendered {
	t.Helper()
	p := goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote)).Parser()
	src := []byte(md)
	doc := p.Parse(text.NewReader(src))
	var out []rendered
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Link:
			out = append(out, rendered{"link", string(x.Destination), nodeText(x, src)})
		case *ast.Image:
			out = append(out, rendered{"image", string(x.Destination), nodeText(x, src)})
		case *ast.AutoLink:
			out = append(out, rendered{"autolink", string(x.URL(src)), string(x.Label(src))})
		case *ast.RawHTML, *ast.HTMLBlock:
			out = append(out, rendered{"html", "", md})
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func nodeText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

const (
	src1 = "https://source.example/page"
	src2 = "https://docs.vendor.example/guide"
)

// checkRendered fails for every link of md that opens no source, or shows
// another address than it opens.
func checkRendered(t *testing.T, md string) {
	t.Helper()
	for _, l := range renderedLinks(t, md) {
		if l.kind == "html" {
			t.Errorf("raw HTML left in %q", md)
			continue
		}
		if l.dest != src1 && l.dest != src2 {
			t.Errorf("a live %s to %q (text %q) in %q", l.kind, l.dest, l.text, md)
			continue
		}
		u, _ := url.Parse(l.dest)
		for _, h := range Addresses(l.text) {
			if h != u.Host && !strings.HasSuffix(u.Host, "."+h) {
				t.Errorf("a link to %q shows %q in %q", l.dest, h, md)
			}
		}
	}
}

// TestMarkdownOnlySourcesAreLinks: a report the model wrote after reading
// hostile pages keeps links only to the sources read, each opening the
// source's own URL with text that shows no other address; every other
// link, image, autolink, Slack link, bare address, mention and raw HTML is
// inert text, as a GFM renderer sees it.
func TestMarkdownOnlySourcesAreLinks(t *testing.T) {
	read := NewSet(src1, src2)
	tests := []struct {
		name, in string
		want     string // "" when only the rendered links are checked
	}{
		{"spoofed link", "[https://vendor.example/support](https://evil.example/phish)",
			"hxxps://vendor[.]example/support (hxxps://evil[.]example/phish)"},
		{"slack link", "<https://evil.example/x|https://docs.vendor.example/support>",
			"hxxps://docs[.]vendor[.]example/support (hxxps://evil[.]example/x)"},
		{"image", "![logo](https://evil.example/pixel.png)", "logo (hxxps://evil[.]example/pixel[.]png)"},
		{"image of a source is a link", "![page](" + src1 + ")", "[page](" + src1 + ")"},
		{"javascript", "[x](javascript:alert(document.cookie))", "x (javascript[:]alert(document[.]cookie))"},
		{"data", "[x](data:text/html;base64,PHNjcmlwdD4=)", "x (data[:]text/html;base64,PHNjcmlwdD4=)"},
		{"vbscript in angle brackets", "[x](<vbscript:msgbox(1)>)", "x (vbscript[:]msgbox(1))"},
		{"title", `[docs](https://evil.example/t "Vendor")`, "docs (hxxps://evil[.]example/t)"},
		{"bare", "see https://evil.example/x. Or www.evil.example!", "see hxxps://evil[.]example/x. Or www[.]evil[.]example!"},
		{"bare in parentheses", "(https://evil.example/a_(b))", "(hxxps://evil[.]example/a_(b))"},
		{"bare source", "see " + src1 + ".", "see " + src1 + "."},
		{"source as written", "[page](HTTPS://Source.Example/page/#frag)", "[page](" + src1 + ")"},
		{"autolink", "<https://evil.example/auto>", "hxxps://evil[.]example/auto"},
		{"email autolink", "<phish@evil.example>", "<\u2060phish@evil[.]example>"},
		{"email", "write to support@evil.example.", "write to support@evil[.]example."},
		{"source autolink", "<" + src1 + ">", "<" + src1 + ">"},
		{"spoofed link to a source", "[https://accounts.google.com](" + src1 + ")",
			"hxxps://accounts[.]google[.]com (<" + src1 + ">)"},
		{"host text on a link to a source", "[ACCOUNTS．GOOGLE．COM](" + src1 + ")", "ACCOUNTS．GOOGLE．COM (<" + src1 + ">)"},
		{"another page of the source's host as text", "[see https://source.example/admin](" + src1 + ")",
			"see hxxps://source[.]example/admin (<" + src1 + ">)"},
		{"own host as text", "[source.example](" + src1 + ")", "[source.example](" + src1 + ")"},
		{"url text of a source", "[" + src1 + "](" + src1 + ")", "<" + src1 + ">"},
		{"mentions", "<!channel> <!here> <!everyone> <@U123> <#C123> <!subteam^S1|@team>",
			"<\u2060!channel> <\u2060!here> <\u2060!everyone> <\u2060@U123> <\u2060#C123> <\u2060!subteam^S1|@team>"},
		{"html", `<a href="https://evil.example">https://docs.vendor.example</a>`,
			`<` + "\u2060" + `a href="hxxps://evil[.]example">hxxps://docs[.]vendor[.]example<` + "\u2060" + `/a>`},
		{"html block", "<div>\n<img src=x onerror=alert(1)>\n</div>", ""},
		{"nested brackets", "[a [b] c](https://evil.example/n)", ""},
		{"reference", "[docs][1] and [1]\n\n[1]: https://evil.example/ref", ""},
		{"reference to a source", "[docs][1]\n\n[1]: " + src1, ""},
		{"collapsed after a link", "[a][b](https://evil.example/x)", ""},
		{"joined by a defanged dot", "[x](https://evil.example.)(y)", ""},
		{"character reference", "[x](https&#58;//evil&#46;example)", ""},
		{"multi-line text", "[https://good.example\n](https://evil.example)", ""},
		{"code", "`https://evil.example/code` and\n\n```\nhttps://evil.example/block\n```", ""},
		{"footnotes stay", "claim[^1]\n\n[^1]: \"q\" — Page, " + src1, "claim[^1]\n\n[^1]: \"q\" — Page, " + src1},
		{"placeholder runes", "a\uE020" + "0\uE022b", "a0b"},
		{"bidi override", "[x](https://evil.example/\u202Egnp.exe)", "x (hxxps://evil[.]example/gnp[.]exe)"},
		{"plain text", "R&D grew 5% (p < 0.05) in 2026 — see Node.js docs.", "R&D grew 5% (p < 0.05) in 2026 — see Node.js docs."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Markdown(tt.in, read)
			if tt.want != "" && got != tt.want {
				t.Errorf("Markdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			checkRendered(t, got)
			if again := Markdown(got, read); again != got {
				t.Errorf("not idempotent:\n once  %q\n twice %q", got, again)
			}
		})
	}
}

// TestMarkdownKeepsFootnotesAndSourceLinks: a well-behaved report comes
// out as it went in.
func TestMarkdownKeepsFootnotesAndSourceLinks(t *testing.T) {
	report := "# Report\n\n## Executive Summary\n\nThe guide says \"x\"[^1], see [the guide](" + src2 + ").\n\n" +
		"## References\n\n[^1]: \"x\" — Guide, " + src2 + "\n\n## Sources read\n\n- Page — " + src1 + "\n"
	if got := Markdown(report, NewSet(src1, src2)); got != report {
		t.Errorf("report changed:\n%s", got)
	}
	checkRendered(t, report)
}

func TestShowsOtherAddress(t *testing.T) {
	for _, tc := range []struct {
		text, target string
		want         bool
	}{
		{"Vendor support", "https://vendor.example/support", false},
		{"https://accounts.google.com/ServiceLogin", "https://evil.example/p/spoof-title", true},
		{"accounts.google.com", "https://evil.example/p", true},
		{"ａｃｃｏｕｎｔｓ．ｇｏｏｇｌｅ．ｃｏｍ", "https://evil.example/p", true},
		{"accounts。google。com", "https://evil.example/p", true},
		{"https://evil.example@accounts.google.com", "https://accounts.google.com/", true},
		{"Docs | vendor.example", "https://docs.vendor.example/guide", false},
		{"www.vendor.example", "https://vendor.example/", false},
		{"docs.vendor.example", "https://vendor.example/", true},
		{"10.0.0.1 admin", "https://vendor.example/", true},
		{"e.g. version 3.5, i.e. U.S. law", "https://vendor.example/", false},
		{"https://vendor.example/a", "https://vendor.example/b", false},
	} {
		if got := ShowsOtherAddress(tc.text, tc.target); got != tc.want {
			t.Errorf("ShowsOtherAddress(%q, %q) = %v, want %v", tc.text, tc.target, got, tc.want)
		}
	}
}

func TestDefang(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://evil.example/x", "hxxps://evil[.]example/x"},
		{"HTTP://EVIL.EXAMPLE", "HxxP://EVIL[.]EXAMPLE"},
		{"ftp://evil.example", "fxp://evil[.]example"},
		{"javascript:alert(1)", "javascript[:]alert(1)"},
		{"https://evil.example/a.(b)", "hxxps://evil[.]example/a[.]\u2060(b)"},
		{"https://evil.example/\u202Ex", "hxxps://evil[.]example/x"},
	} {
		if got := Defang(tc.in); got != tc.want {
			t.Errorf("Defang(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSetSource(t *testing.T) {
	s := NewSet(src1, "javascript:alert(1)", "not a url")
	if s.Len() != 1 {
		t.Errorf("set holds %d addresses, want 1", s.Len())
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{src1, true},
		{"HTTPS://SOURCE.EXAMPLE/page/", true},
		{src1 + "#part", true},
		{"https://source.example/other", false},
		{"https://user@source.example/page", false},
		{"https://source.example/page\"onmouseover=x", false},
		{"javascript:alert(1)", false},
		{"//source.example/page", false},
	} {
		got, ok := s.Source(tc.in)
		if ok != tc.ok || ok && got != src1 {
			t.Errorf("Source(%q) = %q, %v; want %v", tc.in, got, ok, tc.ok)
		}
	}
}

// BenchmarkMarkdown: a report of about 100 KB with a link, a footnote and
// a bare address on every line.
func BenchmarkMarkdown(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		sb.WriteString("- A finding with [a link](https://evil.example/x) and [the page](" + src1 + ") and https://evil.example/bare[^1].\n")
	}
	sb.WriteString("\n[^1]: \"q\" — Page, " + src1 + "\n")
	md := sb.String()
	read := NewSet(src1, src2)
	b.SetBytes(int64(len(md)))
	b.ResetTimer()
	for range b.N {
		Markdown(md, read)
	}
}
