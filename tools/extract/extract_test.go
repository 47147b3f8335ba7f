package extract

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden extracts every testdata/*.html page and compares all fields
// with testdata/<name>.golden.json and the markdown with <name>.golden.md.
func TestGolden(t *testing.T) {
	for _, page := range testPages(t) {
		t.Run(page.name, func(t *testing.T) {
			a, err := Extract(bytes.NewReader(page.data), "https://example.com/section/page.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(a, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join("testdata", page.name+".golden.json"), got)
			checkGolden(t, filepath.Join("testdata", page.name+".golden.md"), []byte(a.Markdown+"\n"))
		})
	}
}

// testPage is one testdata/*.html page.
type testPage struct {
	name string // the file name without .html
	data []byte
}

// testPages reads every testdata/*.html page.
func testPages(tb testing.TB) []testPage {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.html"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no test pages: %v", err)
	}
	pages := make([]testPage, 0, len(paths))
	for _, p := range paths {
		name := filepath.Base(p)
		pages = append(pages, testPage{name: strings.TrimSuffix(name, ".html"), data: readPage(tb, name)})
	}
	return pages
}

// readPage returns the file testdata/name.
func readPage(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// checkText reports each of want that text lacks and each of notWant it has.
func checkText(t *testing.T, what, text string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, w := range notWant {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%s", what, w, text)
		}
	}
}

// wantMeta is the metadata a test expects of an Article; empty fields are not
// checked. published is in RFC 3339.
type wantMeta struct {
	title, lang, published, canonical, byline, site string
	links                                           []string
}

func checkMeta(t *testing.T, a *Article, want wantMeta) {
	t.Helper()
	published := ""
	if !a.Published.IsZero() {
		published = a.Published.Format(time.RFC3339)
	}
	for _, f := range []struct{ name, got, want string }{
		{"title", a.Title, want.title},
		{"lang", a.Lang, want.lang},
		{"published", published, want.published},
		{"canonical", a.CanonicalURL, want.canonical},
		{"byline", a.Byline, want.byline},
		{"site", a.SiteName, want.site},
	} {
		if f.want != "" && f.got != f.want {
			t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	if want.links != nil && !slices.Equal(a.Links, want.links) {
		t.Errorf("links = %q, want %q", a.Links, want.links)
	}
}

// TestGoldenContent states in words what the golden files must show, so a
// careless -update cannot bless a regression.
func TestGoldenContent(t *testing.T) {
	tests := []struct {
		page          string
		want, notWant []string
		mdWant        []string
		wantMeta
	}{
		{
			page: "en_news.html",
			want: []string{"voted seven to two", "A public consultation", "most important decision",
				"fishing association, warned", "Raised sea wall", "What happens next"},
			notWant: []string{"Harbour Council Approves", "cookies", "Tweet", "Related stories",
				"My basement", "Most read", "All rights reserved", "Hidden tracking", "Advertisement",
				"Tags:"},
			mdWant: []string{"## What happens next", "1. A public consultation", "> “This is",
				"| Option | Cost | Homes protected |", "[An engineering report](https://example.org/report.pdf)"},
			wantMeta: wantMeta{title: "Harbour Council Approves New Tide Barrier", lang: "en-US",
				published: "2024-03-05T09:30:00+01:00",
				canonical: "https://example.com/news/2024/tide-barrier", site: "Coastal Gazette"},
		},
		{
			page:    "ja_blog.html",
			want:    []string{"寒い季節は", "大豆 1kg", "三時間ほど煮ます", "秋に食べるのが"},
			notWant: []string{"ツイート", "私も去年", "梅干し", "Copyright", "ホーム"},
			mdWant:  []string{"## 材料", "- 米麹 1kg", "2. 指でつぶせる"},
			wantMeta: wantMeta{title: "はじめての味噌づくり：冬に仕込む手前味噌", lang: "ja",
				published: "2024-01-20T08:00:00+09:00", canonical: "https://kitchen.example.jp/blog/miso"},
		},
		{
			page:    "en_br_layout.html",
			want:    []string{"flea market", "paper capacitors", "played the local station", "One 100k"},
			notWant: []string{"Contact", "Visitors"},
			wantMeta: wantMeta{title: "Notes on Repairing an Old Radio", lang: "en",
				published: "2019-06-02T00:00:00Z", canonical: "http://radio.example.net/notes/repair.html"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			a, err := ExtractBytes(readPage(t, tt.page), "https://example.com/section/page.html", Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkText(t, "text", a.Text, tt.want, tt.notWant)
			checkText(t, "markdown", a.Markdown, tt.mdWant, nil)
			checkMeta(t, a, tt.wantMeta)
			if strings.Contains(a.Text, "\n\n\n") {
				t.Errorf("text has more than one blank line between paragraphs")
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	tests := []struct {
		name, html, pageURL string
		want                wantMeta
	}{
		{
			name:    "title from <title> without site suffix; canonical falls back to the page URL",
			html:    `<title>Ten ways to cook rice well - Food Blog</title><p>x</p>`,
			pageURL: "https://a.example/x",
			want:    wantMeta{title: "Ten ways to cook rice well", canonical: "https://a.example/x"},
		},
		{
			name: "h1 preferred when the title holds it",
			html: `<title>Breaking: How to cook rice well | Site</title><h1>How to cook rice well</h1>`,
			want: wantMeta{title: "How to cook rice well"},
		},
		{
			name:    "og:url resolved, time element date, byline from meta",
			html:    `<meta property="og:url" content="../b/c"><meta name="author" content="Ann Lee"><time datetime="2023-11-02">Nov 2</time>`,
			pageURL: "https://a.example/x/y/z",
			want:    wantMeta{canonical: "https://a.example/x/b/c", byline: "Ann Lee", published: "2023-11-02T00:00:00Z"},
		},
		{
			name: "xml:lang, upper-case rel and ld+json type, microdata date, rel=author link",
			html: `<html xml:lang="de-AT"><head><LINK REL="Canonical" HREF="/kanon"><script type="Application/LD+JSON">` +
				`{"@type":"NewsArticle","headline":"LD headline"}</script></head><body><p>By <a rel="author" href="/u/x">Eva Berg</a></p>` +
				`<span itemprop="datePublished" content="2022-03-04">4. März</span></body></html>`,
			pageURL: "https://a.example/x",
			want: wantMeta{lang: "de-AT", canonical: "https://a.example/kanon", title: "LD headline", byline: "Eva Berg",
				published: "2022-03-04T00:00:00Z"},
		},
		{
			name: "JSON-LD in @graph",
			html: `<script type="application/ld+json">{"@graph":[{"@type":"WebSite","name":"S"},
				{"@type":["BlogPosting"],"headline":"Graph headline","datePublished":"2021-05-06T07:08:09Z",
				"author":{"name":"Kim"},"publisher":{"name":"Pub"}}]}</script>`,
			want: wantMeta{title: "Graph headline", byline: "Kim", site: "Pub", published: "2021-05-06T07:08:09Z"},
		},
		{
			name: "broken JSON-LD is ignored",
			html: `<script type="application/ld+json">{"headline": </script><title>Fallback title here</title>`,
			want: wantMeta{title: "Fallback title here"},
		},
		{
			name: "language guessed from Japanese text",
			html: `<p>これは日本語の文章です。ひらがなとカタカナと漢字が混ざっています。</p>`,
			want: wantMeta{lang: "ja"},
		},
		{
			name: "meta content-language",
			html: `<meta http-equiv="Content-Language" content="pt_BR"><p>Olá</p>`,
			want: wantMeta{lang: "pt-BR"},
		},
		{
			name:    "links are absolute and unique",
			html:    `<article><p>Read <a href="/a">the first</a> and <a href="/a">again</a> and <a href="javascript:x()">no</a> and <a href="https://b.example/c">another source for this long enough paragraph</a>, please.</p></article>`,
			pageURL: "https://a.example/post",
			want:    wantMeta{links: []string{"https://a.example/a", "https://b.example/c"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ExtractBytes([]byte(tt.html), tt.pageURL, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkMeta(t, a, tt.want)
		})
	}
}

func TestHostileInput(t *testing.T) {
	deep := strings.Repeat("<div>", 100000) + "<p>deep text that is long enough to count as a paragraph, with a comma.</p>" + strings.Repeat("</div>", 100000)
	tests := []struct {
		name string
		in   []byte
		opts Options
		want string // substring of Text, if any
	}{
		{name: "empty", in: nil},
		{name: "text only", in: []byte("just some words"), want: "just some words"},
		{name: "deep nesting", in: []byte(deep), want: "deep text"},
		{name: "deep inline nesting", in: []byte(strings.Repeat("<b><i>", 50000) + "x")},
		{name: "deep tables", in: []byte(strings.Repeat("<table><tr><td>", 20000) + "cell")},
		{name: "unclosed everything", in: []byte(`<html><body><p>one<p>two<div><span><a href="x">three<table><td>four`)},
		{name: "invalid utf8", in: []byte("<p>caf\xe9 \xff\xfe long enough paragraph text to be kept by the extractor, yes.</p>")},
		{name: "nul bytes", in: []byte("<p>a\x00b long enough paragraph text to be kept by the extractor, surely.</p>")},
		{name: "huge attribute", in: []byte(`<div class="` + strings.Repeat("comment ", 100000) + `"><p>x</p></div>`)},
		{name: "many siblings", in: []byte(strings.Repeat("<p>word, word.</p>", 50000))},
		{name: "truncated by MaxBytes", in: []byte("<p>" + strings.Repeat("abc ", 1000) + "</p>"), opts: Options{MaxBytes: 100}},
		{name: "node cap", in: []byte(strings.Repeat("<p>para, text.</p>", 1000)), opts: Options{MaxNodes: 10}},
		{name: "shift_jis page", in: []byte("<meta charset=\"shift_jis\"><p>\x93\xfa\x96\x7b\x8c\xea\x82\xcc\x95\xb6\x8f\xcd\x82\xc5\x82\xb7\x81\x42</p>"), want: "日本語の文章です"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Extract(bytes.NewReader(tt.in), "", tt.opts)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			for _, s := range []string{a.Title, a.Text, a.Markdown, a.Byline} {
				if !utf8.ValidString(s) {
					t.Errorf("invalid UTF-8 in %q", s)
				}
			}
			if tt.want != "" && !strings.Contains(a.Text, tt.want) {
				t.Errorf("text %q lacks %q", a.Text, tt.want)
			}
			if tt.opts.MaxBytes > 0 && !a.Truncated {
				t.Errorf("Truncated not set")
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, os.ErrClosed }

func TestReadError(t *testing.T) {
	if _, err := Extract(errReader{}, "", Options{}); err == nil || !strings.Contains(err.Error(), "read") {
		t.Fatalf("want read error, got %v", err)
	}
}

func FuzzExtract(f *testing.F) {
	for _, p := range testPages(f) {
		f.Add(p.data)
	}
	f.Add([]byte(`<table><tr><td><ul><li><table><tr><th>a<td>b</table></ul>`))
	f.Add([]byte(`<pre>` + "```" + `code</pre><blockquote><blockquote><ol start="-5"><li>x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ExtractBytes(data, "https://example.com/a/b", Options{MaxNodes: 20000})
		if err != nil {
			return
		}
		for _, s := range []string{a.Title, a.Text, a.Markdown, a.Byline, a.SiteName, a.Lang, a.CanonicalURL, a.Description} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
		}
		for _, l := range a.Links {
			if !utf8.ValidString(l) {
				t.Fatalf("invalid UTF-8 link: %q", l)
			}
		}
	})
}

// TestCharsetMismatch: a page whose bytes are UTF-8 but whose <meta>
// declares windows-1252 must come out as written, also when the input is
// cut in the middle of a character (Options.MaxBytes) or carries a stray
// byte that is not UTF-8.
func TestCharsetMismatch(t *testing.T) {
	page := readPage(t, "utf8_declared_latin1.html")
	cut := bytes.Index(page, []byte("Genève")) + len("Gen") + 1 // inside "è"
	stray := bytes.Replace(page, []byte("Bahnhofstraße,"), []byte("Bahnhofstraße\xff,"), 1)
	tests := []struct {
		name     string
		data     []byte
		maxBytes int64
		want     []string
	}{
		{"whole page", page, 0, []string{"coûte désormais 5,50 €", "« 喫茶店 »", "Über die Hälfte"}},
		{"cut inside a character", page, int64(cut), []string{"coûte désormais 5,50 €", "« 喫茶店 »", "Über die Hälfte"}},
		{"stray byte", stray, 0, []string{"coûte désormais 5,50 €", "« 喫茶店 »", "Über die Hälfte"}},
		// Declared and real windows-1252 is still decoded as declared.
		{"real windows-1252", []byte("<meta charset=\"windows-1252\"><title>Caf\xe9 cr\xe8me \xe0 Z\xfcrich \x97 na\xefve fa\xe7ades</title>" +
			"<p>Le caf\xe9 cr\xe8me co\xfbte d\xe9sormais 5,50 \x80, \xab 5,50 \x80 \xbb. \xdcber die H\xe4lfte.</p>"), 0,
			[]string{"coûte désormais 5,50 €", "Über die Hälfte"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Extract(bytes.NewReader(tt.data), "https://example.com/a", Options{MaxBytes: tt.maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, a.Text)
				}
			}
			if strings.Contains(a.Text+a.Title, "Ã") {
				t.Errorf("garbled: %s\n%s", a.Title, a.Text)
			}
			if !strings.HasPrefix(a.Title, "Café crème à Zürich") {
				t.Errorf("title %q", a.Title)
			}
		})
	}
}
