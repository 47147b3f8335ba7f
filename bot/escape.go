package bot

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text from the LLM, the web or users goes through Escape before it reaches
// Slack, so it can never notify anybody, spoof a link or carry control
// characters:
//   - invalid UTF-8 is repaired, and control characters (C0 and C1 but
//     newline and tab, NUL included) and bidirectional overrides are removed;
//   - & < > are escaped, so no <!channel>, <!here>, <!everyone>,
//     <!subteam^…>, <@U…>, <#C…> or <url|text> link can be formed in
//     mrkdwn (nor an autolink or HTML in a markdown block);
//   - markdown links whose visible text is not their target
//     ([https://good.example](https://evil.example)) show their real target
//     instead: "text (url)"; any other link or reference-definition syntax
//     left over is broken with an invisible word joiner;
//   - the words @channel, @here, @everyone and @all (which Slack turns into
//     broadcasts with link_names or in some clients), also spelled with a
//     full-width ＠ or letters, or with zero-width characters in between,
//     get a word joiner after the @.
//
// One function serves mrkdwn, plain_text and markdown blocks, for the bot
// and for the digests (digests.go).

var ltgt = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// wordJoiner is U+2060, invisible and not a word character.
const wordJoiner = "\u2060"

// Escape makes untrusted text safe for mrkdwn, plain_text and markdown
// blocks.
func Escape(s string) string {
	s = CleanText(s)
	s = ltgt.Replace(s)
	s = neutralizeLinks(s)
	return neutralizeAt(s)
}

// CleanText repairs invalid UTF-8 and removes control characters other
// than newline and tab (NUL, ESC, DEL, C1) and bidirectional overrides,
// which can make a URL read backwards.
func CleanText(s string) string {
	if !strings.ContainsFunc(s, dropRune) && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if dropRune(r) {
			return -1
		}
		return r
	}, s)
}

func dropRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// inlineLink matches a markdown inline link or image with simple link text
// (no brackets): [text](url) or [text](url "title").
var inlineLink = regexp.MustCompile(`!?\[([^\[\]\n]*)\]\([ \t]*([^()\s]*)(?:[ \t]+[^()\n]*)?\)`)

// linkJoint matches what is left of link syntax after inlineLink: "](",
// "][" and "]:" (also with blanks in between, which lenient parsers
// accept).
var linkJoint = regexp.MustCompile(`\]([ \t]*)([(\[:])`)

// neutralizeLinks rewrites markdown links so that what is shown is where
// they go: [url](url) becomes url (Slack links it by itself), any other
// [text](url) becomes "text (url)". Whatever link syntax is left (nested
// brackets, reference links and their definitions) is broken by a word
// joiner after the "]", so no markdown renderer makes a link of it.
func neutralizeLinks(s string) string {
	if !strings.Contains(s, "]") {
		return s
	}
	if !strings.Contains(s, "](") {
		return linkJoint.ReplaceAllString(s, "]${1}"+wordJoiner+"${2}")
	}
	s = inlineLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := inlineLink.FindStringSubmatch(m)
		text, url := strings.TrimSpace(sub[1]), sub[2]
		switch {
		case url == "":
			return text
		case text == "" || text == url:
			return url
		}
		return text + " (" + url + ")"
	})
	return linkJoint.ReplaceAllString(s, "]${1}"+wordJoiner+"${2}")
}

// broadcastWords are the words that notify many people after an @.
var broadcastWords = []string{"channel", "here", "everyone", "all"}

// neutralizeAt puts a word joiner after every @ (or full-width ＠) that
// starts a broadcast word, seen through full-width letters and zero-width
// characters: Slack then shows the text but notifies nobody.
func neutralizeAt(s string) string {
	if !strings.ContainsAny(s, "@＠") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == '@' || r == '＠') && BroadcastAt(s[i+n:]) {
			b.WriteString(s[i : i+n])
			b.WriteString(wordJoiner)
			i += n
			// Drop zero-width characters between the @ and the word.
			for i < len(s) {
				r, n := utf8.DecodeRuneInString(s[i:])
				if !zeroWidth(r) {
					break
				}
				i += n
			}
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// zeroWidth reports invisible characters a broadcast word may be split by.
// U+2060 (the word joiner) is not among them: it is how Escape neutralises.
func zeroWidth(r rune) bool {
	switch r {
	case '\u200B', '\u200C', '\u200D', '\uFEFF', '\u00AD', '\u180E':
		return true
	}
	return false
}

// foldWidth maps full-width ASCII (U+FF01–U+FF5E) to ASCII, lower case.
func foldWidth(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		r -= 0xFEE0
	}
	return unicode.ToLower(r)
}

// BroadcastAt reports whether rest, the text right after an @, starts with
// a broadcast word (channel, here, everyone, all; any case, full-width
// letters, zero-width characters anywhere in it) not followed by a letter
// or digit.
func BroadcastAt(rest string) bool {
	var word []rune
	i := 0
	for i < len(rest) && len(word) < 9 {
		r, n := utf8.DecodeRuneInString(rest[i:])
		if zeroWidth(r) {
			i += n
			continue
		}
		f := foldWidth(r)
		if f < 'a' || f > 'z' {
			break
		}
		word = append(word, f)
		i += n
	}
	w := string(word)
	for _, bw := range broadcastWords {
		if !strings.HasPrefix(w, bw) {
			continue
		}
		// The next visible character must not continue the word.
		next := rest[i:]
		if len(w) > len(bw) {
			return false
		}
		for next != "" {
			r, n := utf8.DecodeRuneInString(next)
			if zeroWidth(r) {
				next = next[n:]
				continue
			}
			f := foldWidth(r)
			return !unicode.IsLetter(f) && !unicode.IsDigit(f) && f != '_'
		}
		return true
	}
	return false
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
	// Cut the source shorter until the escaped text fits. Escaping a
	// prefix gives (nearly) a prefix of the escaped text, so when 4n runes
	// of the source already escape to more than n, the cut lies within
	// them: a 100 KB text costs a few escapes of 4n runes, not of 100 KB.
	r := []rune(s)
	if len(r) > 4*n && utf8.RuneCountInString(Escape(string(r[:4*n]))) > n {
		r = r[:4*n]
	}
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

// channelIDRE is a conversation id Slack shows as a channel: public (C…)
// or private (G…).
var channelIDRE = regexp.MustCompile(`^[CG][A-Z0-9]{1,30}$`)

// ChannelRef renders a channel id as a channel link (<#C…>) when it is a
// well-formed public or private channel id, and as escaped text otherwise,
// so that a stored id can never inject markup.
func ChannelRef(id string) string {
	if channelIDRE.MatchString(id) {
		return "<#" + id + ">"
	}
	return "`" + Escape(strings.ReplaceAll(id, "`", "'")) + "`"
}

// plainTitle makes untrusted text safe where Slack shows it as is (a
// file's title): control characters removed, < and > replaced by the
// look-alikes ‹ and ›, links shown with their target, broadcast words
// neutralised.
func plainTitle(s string) string {
	s = strings.NewReplacer("<", "‹", ">", "›").Replace(CleanText(s))
	return neutralizeAt(neutralizeLinks(s))
}
