package docs

import (
	"context"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"生成AI規制", "生成 ai 規制"},
		{"国内の生成AI規制の動向", "国内 生成 ai 規制 動向"},
		{"規制について教えて", "規制 につ つい いて 教 えて"},
		{"すごーいカタカナー", "すご ごー ーい カタ タカ カナ ナー"},
		{"Regulations of ＡＩ systems", "regulation ai system"},
		{"ﾃｽﾄ", "テス スト"},
		{"データベース", "デー ータ タベ ベー ース"},
		{"東", "東"},
		{"policies, classes and status", "policy classe status"},
		{"Go1.26 release", "go1 26 release"},
		{"한국어 검색", "한국 국어 검색"},
		{"café naïve", "café naïve"},
		{"   ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var got []string
			for _, tok := range tokenize(tt.in) {
				got = append(got, tok.term)
				if tok.start < 0 || tok.end > len(tt.in) || tok.start >= tok.end {
					t.Errorf("bad offsets %+v", tok)
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("tokenize(%q) = %q, want %q", tt.in, g, tt.want)
			}
		})
	}
}

func TestSplitPassages(t *testing.T) {
	text := "intro line\n\n# Title\n\n## A\n\nbody a\n\n```\n# not a heading\n```\n\n### A1\n\nbody a1\n\n## B\n\nbody b\n\n##NoSpace\n"
	ps := splitPassages(text, 1000)
	var got []string
	for _, p := range ps {
		got = append(got, p.heading+"="+strings.ReplaceAll(p.text, "\n", "|"))
	}
	want := []string{
		"=intro line",
		"Title › A=body a||```|# not a heading|```",
		"Title › A › A1=body a1",
		"Title › B=body b||##NoSpace",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSplitLong(t *testing.T) {
	para := strings.Repeat("これは長い文です。", 40) // 360 runes, sentences of 9
	eng := strings.Repeat("word ", 100)
	for _, s := range []string{para, para + "\n\n" + eng, strings.Repeat("字", 500)} {
		pieces := splitLong(s, 100)
		if len(pieces) < 2 {
			t.Errorf("not split: %d pieces", len(pieces))
		}
		total := 0
		for _, p := range pieces {
			n := len([]rune(p))
			if n > 100 {
				t.Errorf("piece of %d runes > 100", n)
			}
			total += n
		}
		if total < len([]rune(strings.Join(strings.Fields(s), "")))/2 {
			t.Errorf("lost text: %d runes kept", total)
		}
	}
}

func TestURLRoundTrip(t *testing.T) {
	for _, rel := range []string{"a.md", "ja/規制 メモ#1?.md", "dir/100%.txt"} {
		u := FormatURL(rel, 3)
		got, ord, err := ParseURL(u)
		if err != nil || got != rel || ord != 3 {
			t.Errorf("ParseURL(%q) = %q, %d, %v; want %q, 3", u, got, ord, err, rel)
		}
	}
	if u := FormatURL("ja/規制.md", 2); u != "doc://ja/規制.md#2" {
		t.Errorf("FormatURL = %q", u)
	}
	for _, bad := range []string{"https://x/y", "doc://", "doc://a#x", "doc://a%zz"} {
		if _, _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}

func TestConvertHTML(t *testing.T) {
	title, text, err := convertHTML(context.Background(), []byte(`<html><head><title> My  page </title><script>evil()</script></head>
<body><h1>Top</h1><p>Hello <b>world</b></p><h3>Deep</h3><div>x<br>y</div><table><tr><td>a</td><td>b</td></tr></table></body></html>`))
	if err != nil {
		t.Fatal(err)
	}
	if title != "My page" {
		t.Errorf("title = %q", title)
	}
	want := "# Top\n\nHello world\n\n### Deep\n\nx\ny\n\na b"
	if text != want {
		t.Errorf("text = %q, want %q", text, want)
	}
}

func TestConvertMarkdownTitle(t *testing.T) {
	title, text, _ := convertMarkdown(context.Background(), []byte("\xef\xbb\xbf---\ntitle: \"Front\"\ntags: [a]\n---\n# Heading\nbody\r\n"))
	if title != "Front" || text != "# Heading\nbody\n" {
		t.Errorf("title %q text %q", title, text)
	}
	title, _, _ = convertMarkdown(context.Background(), []byte("intro\n## sub\n# Main\n"))
	if title != "Main" {
		t.Errorf("title %q", title)
	}
}

func FuzzTextPipeline(f *testing.F) {
	for _, s := range []string{"生成AI規制の動向", "# H\n\nbody. More!", "ﾃｽﾄ ＡＩ", "e\u0301\u0301", "\xff\xfe", "```\n# x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range tokenize(s) {
			if tok.start < 0 || tok.end > len(s) || tok.start >= tok.end || tok.term == "" {
				t.Fatalf("bad token %+v in %q", tok, s)
			}
		}
		want := map[string]bool{}
		for _, term := range terms(s) {
			want[term] = true
		}
		if sn := snippet(s, want, 40); len([]rune(sn)) > 42 {
			t.Fatalf("snippet too long: %q", sn)
		}
		for _, p := range splitPassages(s, 60) {
			if len([]rune(p.text)) > 60 {
				t.Fatalf("passage of %d runes", len([]rune(p.text)))
			}
		}
	})
}
