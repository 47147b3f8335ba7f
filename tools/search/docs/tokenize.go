package docs

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// token is one index term and where it came from in the original text
// (byte offsets), for snippets.
type token struct {
	term       string
	start, end int
}

// tokenize splits text into index terms so that English and Japanese both
// rank well:
//   - every rune is width-folded (ＡＩ → ai, ｶﾀｶﾅ → カタカナ) and lower-cased;
//   - runs of letters and digits in alphabetic scripts become words, with
//     stop words dropped and a light English plural stemmer;
//   - runs of Han, Hiragana, Katakana and Hangul (Japanese has no spaces)
//     become overlapping character bigrams, a lone character a unigram.
func tokenize(text string) []token {
	var toks []token
	var run []rune     // folded runes of the current run
	var offs []int     // byte offset of each rune of the run
	kind := scriptNone // kind of the current run
	flush := func(end int) {
		if len(run) == 0 {
			return
		}
		toks = appendRun(toks, run, offs, end, kind)
		run, offs = run[:0], offs[:0]
	}
	for i, r := range text {
		f := fold(r)
		k := scriptOf(f)
		if f == 'ー' && (kind == scriptHiragana || kind == scriptHan) {
			k = kind // the long-vowel mark belongs to the word it follows
		}
		switch {
		case k == scriptNone && unicode.Is(unicode.Mn, f) && len(run) > 0:
			// Combining marks stay with their base letter.
			continue
		case k == scriptNone:
			flush(i)
			kind = scriptNone
			continue
		case k != kind:
			flush(i)
			kind = k
		}
		run, offs = append(run, f), append(offs, i)
	}
	flush(len(text))
	return toks
}

// appendRun appends the tokens of a run of one script (its folded runes,
// their byte offsets, the run's end): a normalised word for alphabetic
// scripts; overlapping bigrams for the others, a lone character a word of
// its own unless hiragana (nearly always a particle: の, は, を).
func appendRun(toks []token, run []rune, offs []int, end int, kind script) []token {
	switch {
	case kind == scriptWord:
		if w := normalizeWord(string(run)); w != "" {
			toks = append(toks, token{w, offs[0], end})
		}
	case len(run) == 1:
		if kind != scriptHiragana {
			toks = append(toks, token{string(run), offs[0], end})
		}
	default:
		for i := 0; i+1 < len(run); i++ {
			e := end
			if i+2 < len(run) {
				e = offs[i+2]
			}
			toks = append(toks, token{string(run[i : i+2]), offs[i], e})
		}
	}
	return toks
}

type script int

const (
	scriptNone script = iota
	scriptWord        // letters and digits of alphabetic scripts
	scriptHan
	scriptHiragana
	scriptKatakana
	scriptHangul
)

// scriptOf classifies a folded rune. Runs of Han, Hiragana, Katakana and
// Hangul are kept apart: a change of script is the best cheap guess at a
// Japanese word boundary (規制 | について).
func scriptOf(r rune) script {
	if r < 0x1100 {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return scriptWord
		}
		return scriptNone
	}
	switch r {
	case '々', '〆', '〇':
		return scriptHan
	case 'ー', 'ヽ', 'ヾ', 'ヶ':
		return scriptKatakana
	case 'ゝ', 'ゞ':
		return scriptHiragana
	}
	switch {
	case unicode.Is(unicode.Han, r):
		return scriptHan
	case unicode.Is(unicode.Hiragana, r):
		return scriptHiragana
	case unicode.Is(unicode.Katakana, r):
		return scriptKatakana
	case unicode.Is(unicode.Hangul, r):
		return scriptHangul
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return scriptWord
	}
	return scriptNone
}

// isHiragana reports whether term is made of hiragana only: in a query
// with other terms such a term is mostly grammar and weighs less.
func isHiragana(term string) bool {
	for _, r := range term {
		if scriptOf(r) != scriptHiragana {
			return false
		}
	}
	return term != ""
}

// terms returns the distinct terms of text, in first-seen order.
func terms(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokenize(text) {
		if !seen[t.term] {
			seen[t.term] = true
			out = append(out, t.term)
		}
	}
	return out
}

func fold(r rune) rune {
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	if f := width.LookupRune(r).Folded(); f != 0 {
		r = f
	}
	return unicode.ToLower(r)
}

const maxWordLen = 64

func normalizeWord(w string) string {
	if len(w) > maxWordLen || stopWords[w] {
		return ""
	}
	return stem(w)
}

// stem is an "S-stemmer" (Harman 1991): it folds English plurals onto
// their singular and leaves everything else alone, which is safe for
// names, code identifiers and other languages.
func stem(w string) string {
	n := len(w)
	if n <= 3 || !isASCII(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "aes") && !strings.HasSuffix(w, "ees") && !strings.HasSuffix(w, "oes"):
		return w[:n-1]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from has have in into is it its
		of on or that the their there these this those to was were will with`) {
		stopWords[w] = true
	}
}
