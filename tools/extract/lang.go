package extract

import (
	"strings"
	"unicode"
)

// guessLang guesses the language of text from its script: Japanese when it
// has kana, Korean for Hangul, Chinese for Han without kana, English for
// Latin text with common English words. It returns "" when unsure.
func guessLang(text string) string {
	var kana, han, hangul, latin, letters int
	for i, r := range text {
		if i > 1<<16 {
			break
		}
		switch {
		case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			kana++
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case unicode.Is(unicode.Latin, r):
			latin++
		}
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters == 0 {
		return ""
	}
	switch {
	case kana*20 >= letters && kana+han >= letters/3:
		return "ja"
	case hangul*3 >= letters:
		return "ko"
	case han*3 >= letters:
		return "zh"
	case latin*2 >= letters && englishish(text):
		return "en"
	}
	return ""
}

var englishWords = map[string]bool{
	"the": true, "and": true, "of": true, "to": true, "in": true, "is": true, "that": true,
	"for": true, "it": true, "with": true, "was": true, "on": true, "as": true, "are": true,
	"this": true, "be": true, "by": true, "at": true, "from": true, "have": true,
}

// englishish reports whether common English function words make up a fair
// share of the first maxLangWords words of text.
func englishish(text string) bool {
	words, hits := 0, 0
	word := func(w string) {
		words++
		if len(w) <= 4 && englishWords[strings.ToLower(w)] {
			hits++
		}
	}
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			word(text[start:i])
			start = -1
			if words >= maxLangWords {
				break
			}
		}
	}
	if start >= 0 && words < maxLangWords {
		word(text[start:])
	}
	return words > 0 && hits*100 >= words*8
}

// maxLangWords is how many words englishish reads.
const maxLangWords = 2000
