package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\twith tab\nand newline", "plain text\twith tab\nand newline"},
		{"title\x1b]52;c;ZWNobyBwd25lZA==\a end", "title]52;c;ZWNobyBwd25lZA== end"},
		{"osc with ST\x1b]0;pwned\x1b\\", "osc with ST]0;pwned\\"},
		{"c1 csi \u009b2J clear", "c1 csi 2J clear"},
		{"raw byte \x9b2J", "raw byte \uFFFD2J"},
		{"carriage\rreturn and DEL\x7f", "carriagereturn and DEL"},
		{"NUL\x00 and bell\a", "NUL and bell"},
		{"日本語のタイトル — ok", "日本語のタイトル — ok"},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A rune split across two writes survives whole; an escape in either half
// does not.
func TestTermWriterSplitRune(t *testing.T) {
	var b bytes.Buffer
	w := newTermWriter(&b)
	s := "ab日\x1b[31m本"
	raw := []byte(s)
	for _, chunk := range [][]byte{raw[:3], raw[3:6], raw[6:]} {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := b.String(); got != "ab日[31m本" || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("wrote %q", got)
	}
}

// BenchmarkTermSafe: a 20 KB report, clean (the common case, no copy) and
// with escapes to strip.
func BenchmarkTermSafe(b *testing.B) {
	clean := strings.Repeat("The EU AI Act entered into force on 1 August 2024. 日本語も。\n", 300)
	dirty := strings.Repeat("The EU AI Act\x1b]52;c;ZWNobw==\a entered into force \u009b2J on 1 August 2024.\n", 300)
	for _, bc := range []struct{ name, s string }{{"clean", clean}, {"dirty", dirty}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			b.ReportAllocs()
			for b.Loop() {
				termSafe(bc.s)
			}
		})
	}
}

// FuzzTermSafe: whatever a page or the model sends, what reaches the
// terminal has no control character but newline and tab, is valid UTF-8,
// keeps every printable rune in order, and is stable under a second pass;
// the writer agrees with the function however the text is split.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x1b]52;c;ZWNobw==\ab", "\u009b2J", "\x9b2J", "日本\r\n\t", "\x00\x7f\u0085"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint8) {
		got := termSafe(s)
		if !utf8.ValidString(got) {
			t.Fatalf("termSafe(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("termSafe(%q) = %q keeps %U", s, got, r)
			}
		}
		if again := termSafe(got); again != got {
			t.Fatalf("not stable: %q then %q", got, again)
		}
		var kept []rune // every invalid byte becomes one U+FFFD
		for _, r := range s {
			if !unsafeRune(r) {
				kept = append(kept, r)
			}
		}
		if string(kept) != got {
			t.Fatalf("termSafe(%q) = %q, want the printable runes %q", s, got, string(kept))
		}
		var b bytes.Buffer
		w := newTermWriter(&b)
		i := int(cut) % (len(s) + 1)
		w.Write([]byte(s[:i]))
		w.Write([]byte(s[i:]))
		if utf8.ValidString(s) && b.String() != got {
			t.Fatalf("split at %d: writer %q, termSafe %q", i, b.String(), got)
		}
	})
}
