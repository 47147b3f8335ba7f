package bot

import (
	"strings"
	"testing"
	"unicode/utf8"

	"deepresearch/agent/links"
)

func TestMrkdwnFromMarkdown(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bold", "a **b** c", "a *b* c"},
		{"bold underscores", "__b__", "*b*"},
		{"italic", "an *italic* word", "an _italic_ word"},
		{"bold and italic", "**B** and *i*", "*B* and _i_"},
		{"strike", "~~old~~", "~old~"},
		{"heading", "## Key findings", "*Key findings*"},
		{"bullets", "- one\n* two\n+ three", "• one\n• two\n• three"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no live mention", "<!channel> ping <@U123>", "&lt;!channel&gt; ping &lt;@U123&gt;"},
		{"plain broadcast word", "hey @channel", "hey @\u2060channel"},
		{"link with its own url as text", "[https://a.example/x](https://a.example/x)", "<https://a.example/x>"},
		{"link with title", "see [the report](https://a.example/r)", "see the report (<https://a.example/r>)"},
		{"link to a source as written", "[r](HTTPS://A.example/r/#part)", "r (<https://a.example/r>)"},
		{"spoofed link to a source shows the real target", "[https://good.example](https://a.example/r)", "hxxps://good[.]example (<https://a.example/r>)"},
		{"spoofed link to no source is inert", "[https://good.example](https://evil.example)", "hxxps://good[.]example (hxxps://evil[.]example)"},
		{"link to no source is inert", "see [the docs](https://evil.example/docs)", "see the docs (hxxps://evil[.]example/docs)"},
		{"image", "![x](https://evil.example/p.png)", "x (hxxps://evil[.]example/p[.]png)"},
		{"bare source address", "read https://a.example/x.", "read <https://a.example/x>."},
		{"bare address", "read https://evil.example/x and www.evil.example", "read hxxps://evil[.]example/x and www[.]evil[.]example"},
		{"slack link syntax", "<https://evil.example/x|https://a.example/x>", "&lt;hxxps://evil[.]example/x|hxxps://a[.]example/x&gt;"},
		{"address in code", "`https://evil.example/x`", "`hxxps://evil[.]example/x`"},
		{"javascript link is inert text", "[click](javascript:alert(1))", "[click]\u2060(javascript:alert(1))"},
		{"data link is inert text", "[click](data:text/html,x)", "click (data[:]text/html,x)"},
		{"link target cannot break out", "[x](https://a.example/a|b>c)", "x (hxxps://a[.]example/a|b&gt;c)"},
		{"footnote marker", "claim[^1]", "claim[1]"},
		{"inline code literal", "use `**x** <y>`", "use `**x** &lt;y&gt;`"},
		{"code block", "```\n<b>**x**\n```", "```\n&lt;b&gt;**x**\n```"},
		{"placeholder runes from input are dropped", "a\uE003b\uE004", "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := links.NewSet("https://a.example/x", "https://a.example/r")
			if got := mrkdwnFromMarkdown(tt.in, read); got != tt.want {
				t.Fatalf("mrkdwnFromMarkdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	text := strings.Repeat("line of text\n", 500) + strings.Repeat("x", 7000)
	parts := splitLines(text, 3000)
	if strings.Join(parts, "") == "" {
		t.Fatal("no parts")
	}
	total := 0
	for _, p := range parts {
		n := utf8.RuneCountInString(p)
		if n > 3000 || n == 0 {
			t.Fatalf("part of %d runes", n)
		}
		total += n
	}
	// Every rune but the line breaks the split consumed is kept.
	if want := utf8.RuneCountInString(strings.ReplaceAll(text, "\n", "")); total < want {
		t.Fatalf("kept %d runes, want at least %d", total, want)
	}
}
