package agent

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The citation check verifies a finding's quote against the page, not that
// the quote supports the claim: a claim can state a year or an amount its
// quote does not ("The act took effect in 2025" on "The act took effect").
// markClaim checks that every number of a claim — amounts, percentages,
// the digits of dates — appears in its quote, and marks the claim with the
// ones that do not, so no one downstream takes them for sourced.
func markClaim(claim, quote, lang string) string {
	missing := unstatedFigures(claim, quote)
	if len(missing) == 0 {
		return claim
	}
	return claim + " " + label(lang, "[not in the quote: ", "［引用にない数値: ") + strings.Join(missing, ", ") + label(lang, "]", "］")
}

// unstatedFigures returns the numbers claim states that quote does not, in
// the claim's order. Numbers compare by their digits (full-width digits
// folded, thousands separators and leading zeros dropped); an English month
// name in the quote stands for its number ("1 June 2025" states 6).
func unstatedFigures(claim, quote string) []string {
	have := map[string]bool{}
	for _, f := range figures(quote) {
		have[f] = true
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(quote), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if m, ok := months[w]; ok {
			have[m] = true
		}
	}
	var out []string
	for _, f := range figures(claim) {
		if !have[f] {
			have[f] = true // name each once
			out = append(out, f)
		}
	}
	return out
}

var months = func() map[string]string {
	m := map[string]string{}
	for i, name := range []string{"january", "february", "march", "april", "may", "june", "july", "august",
		"september", "october", "november", "december"} {
		n := string(rune('0'+(i+1)/10)) + string(rune('0'+(i+1)%10))
		n = strings.TrimLeft(n, "0")
		m[name] = n
		m[name[:3]] = n
	}
	m["sept"] = "9"
	return m
}()

// figures lists the numbers of s: runs of digits, with a separator (",",
// ".", "，") between digits kept as one number ("1,200" is 1200, "3.5"
// stays 3.5).
func figures(s string) []string {
	rs := []rune(norm.NFKC.String(s))
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, canonical(cur.String()))
			cur.Reset()
		}
	}
	for i, r := range rs {
		switch {
		case r >= '0' && r <= '9':
			cur.WriteRune(r)
		case (r == ',' || r == '.') && cur.Len() > 0 && i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '9':
			if r == '.' {
				cur.WriteRune('.')
			}
		default:
			flush()
		}
	}
	flush()
	return out
}

// canonical drops leading zeros and a zero fraction: "06" is 6, "7.0" is 7.
func canonical(n string) string {
	if i := strings.IndexByte(n, '.'); i >= 0 {
		frac := strings.TrimRight(n[i+1:], "0")
		n = n[:i]
		if frac != "" {
			n += "." + frac
		}
	}
	if t := strings.TrimLeft(n, "0"); t != "" && t[0] != '.' {
		return t
	}
	if strings.Trim(n, "0") == "" {
		return "0"
	}
	return n
}
