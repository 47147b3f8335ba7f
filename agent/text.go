package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"deepresearch/prompts"
	"deepresearch/tools/search"
)

// DetectLanguage guesses the language of a question: "ja" when it has kana
// or mostly CJK ideographs, "zh" for Han without kana, "ko" for Hangul, else
// "en".
func DetectLanguage(s string) string {
	var kana, han, hangul, letters int
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			kana++
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case unicode.IsLetter(r):
			letters++
		}
	}
	switch {
	case kana > 0:
		return "ja"
	case hangul > 0 && hangul >= letters:
		return "ko"
	case han > 0 && han >= letters:
		return "zh"
	}
	return "en"
}

// normURL is the key of a source: search.NormalizeURL, or the trimmed input
// when it is not a URL the normaliser accepts.
func normURL(u string) string {
	u = strings.TrimSpace(u)
	if n, err := search.NormalizeURL(u); err == nil {
		return n
	}
	return u
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

func hashID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// normQuery folds a query for "already run" checks.
func normQuery(q string) string {
	return strings.Join(strings.Fields(strings.ToLower(q)), " ")
}

// dedupQueries drops empty queries, queries already in seen, and repeats.
func dedupQueries(qs []string, seen []string, limit int) []string {
	have := map[string]bool{}
	for _, q := range seen {
		have[normQuery(q)] = true
	}
	var out []string
	for _, q := range qs {
		q = strings.TrimSpace(q)
		k := normQuery(q)
		if k == "" || have[k] {
			continue
		}
		have[k] = true
		out = append(out, clip(q, 300))
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// sentences splits text into sentences (English and Japanese punctuation).
func sentences(text string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		s := strings.TrimSpace(b.String())
		if s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	rs := []rune(text)
	for i, r := range rs {
		if r == '\n' && i+1 < len(rs) && rs[i+1] == '\n' {
			flush()
			continue
		}
		b.WriteRune(r)
		switch r {
		case '。', '！', '？':
			flush()
		case '.', '!', '?':
			if i+1 == len(rs) || unicode.IsSpace(rs[i+1]) {
				flush()
			}
		}
	}
	flush()
	return out
}

// label returns the Japanese or English text for the run's language.
func label(lang, en, ja string) string {
	if lang == "ja" {
		return ja
	}
	return en
}

func slicesSortLinks(ls []prompts.Link) {
	slices.SortFunc(ls, func(a, b prompts.Link) int { return strings.Compare(a.URL, b.URL) })
}

var citationMarker = regexp.MustCompile(`\[\^[^\]\s]+\]`)

func sortSources(ss []Source) {
	slices.SortFunc(ss, func(a, b Source) int { return strings.Compare(a.URL, b.URL) })
}
