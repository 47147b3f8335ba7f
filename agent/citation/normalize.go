package citation

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Normalize folds text for quote matching: Unicode NFKC (full-width ASCII
// and half-width kana become their usual forms), lower case, every kind of
// quotation mark and dash unified, and all white space removed — pages break
// lines inside sentences, and Japanese puts no spaces between words, so
// spacing carries no meaning for a verbatim check. Markdown emphasis marks
// (* and _) and zero-width characters are dropped too.
func Normalize(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u00ad':
			continue
		case r == '*' || r == '_' || r == '`':
			continue
		}
		switch r {
		case '\u2018', '\u2019', '\u201a', '\u201b', '\u2032', '`', '\u00b4':
			r = '\''
		case '\u201c', '\u201d', '\u201e', '\u201f', '\u2033', '\u00ab', '\u00bb', '\u300c', '\u300d', '\u300e', '\u300f':
			r = '"'
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			r = '-'
		case '\u2026':
			b.WriteString("...")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// segments splits a quote at ellipses ("...", "…"), so a quote that skips
// words matches when its parts appear in order.
func segments(q string) []string {
	q = strings.ReplaceAll(q, "\u2026", "...")
	var out []string
	for _, p := range strings.Split(q, "...") {
		if n := strings.Trim(Normalize(p), "\"'"); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Contains reports whether quote appears in text after normalisation (text
// should already be normalised with Normalize). Parts of a quote separated by
// an ellipsis must appear in order.
func Contains(normText, quote string) bool {
	segs := segments(quote)
	if len(segs) == 0 {
		return false
	}
	rest := normText
	for _, s := range segs {
		i := strings.Index(rest, s)
		if i < 0 {
			return false
		}
		rest = rest[i+len(s):]
	}
	return true
}
