package bot

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Text from the LLM, the web or users goes through Escape before it reaches
// Slack, so it can never notify anybody: & < > are escaped (no <!channel>,
// <!here>, <!everyone>, <!subteam^…>, <@U…> or <#C…> can be formed), and the
// plain words @channel, @here, @everyone (which Slack turns into broadcasts
// with link_names or in some clients) get a zero-width joiner after the @.

var atBroadcast = regexp.MustCompile(`(?i)@(channel|here|everyone|all)\b`)

var ltgt = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// wordJoiner is U+2060, invisible and not a word character.
const wordJoiner = "\u2060"

// Escape makes untrusted text safe for mrkdwn and plain_text fields.
func Escape(s string) string {
	s = ltgt.Replace(s)
	return neutralizeAt(s)
}

func neutralizeAt(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return atBroadcast.ReplaceAllStringFunc(s, func(m string) string { return "@" + wordJoiner + m[1:] })
}

// Truncate cuts s to at most n runes, ending with "…" when cut.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// truncateEscaped escapes s and keeps the result within n runes, without
// cutting an escape sequence in half.
func truncateEscaped(s string, n int) string {
	e := Escape(s)
	if utf8.RuneCountInString(e) <= n {
		return e
	}
	// Cut the source shorter until the escaped text fits.
	r := []rune(s)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if utf8.RuneCountInString(Escape(string(r[:mid])))+1 <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return Escape(string(r[:lo])) + "…"
}
