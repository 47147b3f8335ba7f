package dataviz

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// quoted is one number as a quote writes it, with what the quote says
// about it: its value (scaled by a word such as "million"), the currency
// or unit written next to it ("" when none), and the text as written.
type quoted struct {
	Value float64
	Unit  string
	Text  string
}

// numberRE finds the numbers of a text: digits with thousands separators
// ("1,299", "1 299") and a decimal part, optionally followed by a scale word.
var numberRE = regexp.MustCompile(`(?i)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s?(thousand|million|billion|trillion|bn|mn|k|m|b)\b)?`)

var scales = map[string]float64{
	"thousand": 1e3, "k": 1e3,
	"million": 1e6, "mn": 1e6, "m": 1e6,
	"billion": 1e9, "bn": 1e9, "b": 1e9,
	"trillion": 1e12,
}

// currency symbols and words, to ISO codes. Longer prefixes first.
var (
	symbolsBefore = []struct{ sym, code string }{
		{"US$", "USD"}, {"C$", "CAD"}, {"A$", "AUD"}, {"NZ$", "NZD"}, {"HK$", "HKD"}, {"S$", "SGD"},
		{"$", "USD"}, {"€", "EUR"}, {"£", "GBP"}, {"¥", "JPY"}, {"₹", "INR"}, {"₩", "KRW"}, {"CHF", "CHF"},
	}
	wordsAfter = map[string]string{
		"usd": "USD", "dollars": "USD", "dollar": "USD", "eur": "EUR", "euros": "EUR", "euro": "EUR",
		"gbp": "GBP", "pounds": "GBP", "jpy": "JPY", "yen": "JPY", "円": "JPY", "chf": "CHF", "francs": "CHF",
		"cad": "CAD", "aud": "AUD", "inr": "INR", "rupees": "INR", "krw": "KRW", "won": "KRW",
		"%": "%", "percent": "%", "per cent": "%",
	}
)

// NormUnit is a unit as the table compares units: currencies by their ISO
// code ("$", "usd", "dollars" are "USD"), percentages as "%", anything
// else lower-cased, on one line, without markup, at most 24 runes.
func NormUnit(u string) string {
	t := clean(u, 24)
	if t == "" {
		return ""
	}
	for _, s := range symbolsBefore {
		if t == s.sym {
			return s.code
		}
	}
	if c, ok := wordsAfter[strings.ToLower(t)]; ok {
		return c
	}
	up := strings.ToUpper(t)
	for _, c := range wordsAfter {
		if up == c {
			return c
		}
	}
	return strings.ToLower(t)
}

// numbersIn lists the numbers a quote writes.
func numbersIn(quote string) []quoted {
	var out []quoted
	for _, m := range numberRE.FindAllStringSubmatchIndex(quote, -1) {
		start, end := m[0], m[1]
		if start > 0 {
			if r := rune(quote[start-1]); unicode.IsLetter(r) || r == '.' && start > 1 && unicode.IsDigit(rune(quote[start-2])) {
				continue // part of a word ("A4") or of another number
			}
		}
		intPart := strings.ReplaceAll(quote[m[2]:m[3]], ",", "")
		frac := ""
		if m[4] >= 0 {
			frac = quote[m[4]:m[5]]
		}
		v, err := strconv.ParseFloat(intPart+frac, 64)
		if err != nil {
			continue
		}
		scaled := v
		if m[6] >= 0 {
			scaled = v * scales[strings.ToLower(quote[m[6]:m[7]])]
		}
		unit := unitAround(quote[:start], quote[end:])
		out = append(out, quoted{Value: v, Unit: unit, Text: quote[start:end]})
		if scaled != v {
			out = append(out, quoted{Value: scaled, Unit: unit, Text: quote[start:end]})
		}
	}
	return out
}

// unitAround is the currency or unit written next to a number: a symbol
// just before it ("$19.99", "€ 12") or a word just after ("12 EUR", "5%").
func unitAround(before, after string) string {
	b := strings.TrimRight(before, " \u00a0")
	for _, s := range symbolsBefore {
		if strings.HasSuffix(b, s.sym) {
			return s.code
		}
	}
	for _, code := range []string{"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD"} {
		if strings.HasSuffix(b, code) {
			return code
		}
	}
	a := strings.ToLower(strings.TrimLeft(after, " \u00a0"))
	if strings.HasPrefix(a, "%") || strings.HasPrefix(a, "per cent") || strings.HasPrefix(a, "percent") {
		return "%"
	}
	word := a
	if i := strings.IndexFunc(a, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		word = a[:i]
	}
	if c, ok := wordsAfter[word]; ok {
		return c
	}
	if strings.HasPrefix(a, "円") {
		return "JPY"
	}
	return ""
}

// sameNumber reports whether two values are the same number as written
// (to the precision a quote writes: a relative 1e-9).
func sameNumber(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// findIn looks for value in quote: the number as written there, or ""
// when the quote does not hold it. unit is what the quote writes next to
// the number.
func findIn(quote string, value float64) (q quoted, ok bool) {
	for _, n := range numbersIn(quote) {
		if sameNumber(n.Value, value) {
			return n, true
		}
	}
	return quoted{}, false
}

// Comparable reports whether a quote writes a number worth putting in a
// table: an amount in a currency, a percentage, a number with a decimal
// part, or one of 10 or more that is not a year.
func Comparable(quote string) bool {
	for _, n := range numbersIn(quote) {
		year := n.Value == math.Trunc(n.Value) && n.Value >= 1800 && n.Value <= 2200
		if n.Unit != "" || strings.Contains(n.Text, ".") || n.Value >= 10 && !year {
			return true
		}
	}
	return false
}
