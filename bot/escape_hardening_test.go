package bot

import (
	"strings"
	"testing"
)

// adversarial are hostile strings from the model, the web or users: every
// renderer and store is checked with them (escape, render property tests).
var adversarial = []string{
	"<!channel>", "<!here>", "<!everyone>", "<!here|here>", "<!subteam^S0123|@team>", "<@U0123>", "<@W0123|bob>", "<@B0123>",
	"@channel", "@here", "@everyone", "@all", "@Channel!", "hey @here.", "(@all)",
	"＠channel", "＠ｃｈａｎｎｅｌ", "@ｈｅｒｅ", "@\u200bchannel", "@\u200dhere", "@c\u200bhannel", "@\ufeffeveryone", "＠\u200bａｌｌ",
	"<!chan\u200dnel>", "<\u200b!channel>", "&lt;!channel&gt;", "<<!here>>", "<#C0123>", "<#C1|x> <!channel> <#C1",
	"<https://evil.example|https://good.example>", "<https://evil.example|click>", "<mailto:a@evil.example|a@good.example>",
	"[https://good.example](https://evil.example)", "[click](https://evil.example \"title\")", "![img](https://evil.example/x.png)",
	"[a [nested] text](https://evil.example)", "[https://good.example] (https://evil.example)", "[good][1]\n\n[1]: https://evil.example",
	"[https://good.example]\n\n[https://good.example]: https://evil.example", "- [x]: https://evil.example", "[x]\t(https://evil.example)",
	"<a href=\"https://evil.example\">https://good.example</a>", "<https://evil.example>",
	"nul\x00byte", "esc\x1b]52;c;aGVsbG8=\x07 osc52", "bell\a", "cr\rlf", "del\x7f", "c1\u0085\u009b", "bidi\u202egro.doog", "\u2066iso\u2069",
	"bad utf8 \xff\xfe", "tab\tand\nnewline",
}

func TestEscapeAdversarial(t *testing.T) {
	for _, in := range adversarial {
		out := Escape(in)
		if h := Hazards(out); len(h) > 0 {
			t.Errorf("Escape(%q) = %q: %v", in, out, h)
		}
	}
}

func TestEscapeShowsRealLinkTarget(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[https://good.example](https://evil.example)", "https://good.example (https://evil.example)"},
		{"see [the report](https://evil.example/r \"t\") now", "see the report (https://evil.example/r) now"},
		{"[https://same.example](https://same.example)", "https://same.example"},
		{"![](https://evil.example/x.png)", "https://evil.example/x.png"},
		{"<https://evil.example|https://good.example>", "&lt;https://evil.example|https://good.example&gt;"},
		{"plain [brackets] stay", "plain [brackets] stay"},
		{"footnote[^1] stays", "footnote[^1] stays"},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Leftover link syntax is broken, never shown as a link.
	for _, in := range []string{"[a [b] c](https://evil.example)", "[good][1]\n[1]: https://evil.example", "[x] (https://evil.example)"} {
		out := Escape(in)
		if strings.Contains(out, "](") || strings.Contains(out, "][") || strings.Contains(out, "]:") || strings.Contains(out, "] (") {
			t.Errorf("Escape(%q) = %q keeps link syntax", in, out)
		}
		if !strings.Contains(out, "https://evil.example") {
			t.Errorf("Escape(%q) = %q hides the target", in, out)
		}
	}
}

func TestEscapeBroadcastVariants(t *testing.T) {
	for _, in := range []string{"＠channel", "@ｃｈａｎｎｅｌ", "@\u200bhere", "@e\u200dveryone", "@ALL", "＠ａｌｌ!"} {
		if !strings.Contains(Escape(in), wordJoiner) {
			t.Errorf("Escape(%q) = %q: not neutralised", in, Escape(in))
		}
	}
	for _, in := range []string{"bob@hereford.example", "@allison", "@channels", "@here2", "user@example.com"} {
		if got := Escape(in); got != in {
			t.Errorf("Escape(%q) = %q: changed a harmless word", in, got)
		}
	}
}

func TestEscapeControlCharacters(t *testing.T) {
	got := Escape("a\x00b\x1b[31mc\rd\u009be\u202ef\xffg\th\ni")
	if want := "ab[31mcde" + "f\uFFFDg\th\ni"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestChannelRef(t *testing.T) {
	tests := []struct{ in, want string }{
		{"C0123ABC", "<#C0123ABC>"},
		{"G0123", "<#G0123>"},
		{"D0123", "`D0123`"},
		{"C1|x> <!channel> <#C1", "`C1|x&gt; &lt;!channel&gt; &lt;#C1`"},
		{"c0123", "`c0123`"},
		{"", "``"},
	}
	for _, tt := range tests {
		if got := ChannelRef(tt.in); got != tt.want {
			t.Errorf("ChannelRef(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if h := Hazards(ChannelRef(tt.in)); len(h) > 0 {
			t.Errorf("ChannelRef(%q): %v", tt.in, h)
		}
	}
}

func TestHazardsFindsWhatEscapePrevents(t *testing.T) {
	for _, in := range []string{"<!channel>", "<@U1>", "@here", "＠channel", "@\u200bchannel", "<https://evil|https://good>", "[https://good](https://evil)", "a\x00b", "x\x1by", `{"type":"broadcast","range":"channel"}`, `{"text":"<!here>"}`} {
		if len(Hazards(in)) == 0 {
			t.Errorf("Hazards(%q) found nothing", in)
		}
	}
	for _, in := range []string{"hello", "<#C123>", "<https://ok.example|https://ok.example>", "@\u2060channel", `{"text":"fine &lt;!here&gt;"}`} {
		if h := Hazards(in); len(h) > 0 {
			t.Errorf("Hazards(%q) = %v", in, h)
		}
	}
}

// BenchmarkTruncateEscaped100KB: a 100 KB hostile text cut to a section's
// 3,000 characters (go test -run '^$' -bench TruncateEscaped ./bot/).
func BenchmarkTruncateEscaped100KB(b *testing.B) {
	s := strings.Repeat("[https://good.example](https://evil.example) <!channel> ＠here \x00 日本語 ", 1500)
	for b.Loop() {
		_ = truncateEscaped(s, 3000)
	}
}
