// Package links keeps the links of a run's text honest. A report is written
// by a model that read hostile pages, so any address in it may be an
// attacker's: only the sources the run read may be links, and a link's
// visible text may never show another address than the one it opens.
// Everything else stays readable but inert: a URL is shown defanged
// (hxxps://evil[.]example/x), which no markdown renderer, Slack client or
// chat app turns into a link again.
//
// Markdown neutralises a markdown report (the file a person downloads);
// the Slack faces (bot) use Set, Source, ShowsOtherAddress, Defang and
// Bare to render their own syntax by the same rules.
package links

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"deepresearch/tools/search"

	"golang.org/x/text/unicode/norm"
)

// Set is the addresses a run read: the only ones its text may link.
type Set struct {
	m map[string]string // normalised URL -> the source's URL
}

// NewSet returns the set of the given source URLs (http or https; others
// are ignored).
func NewSet(urls ...string) Set {
	s := Set{m: make(map[string]string, len(urls))}
	for _, u := range urls {
		if canon, ok := httpURL(u); ok {
			if n, err := search.NormalizeURL(canon); err == nil {
				if _, dup := s.m[n]; !dup {
					s.m[n] = canon
				}
			}
		}
	}
	return s
}

// Len is the number of addresses in the set.
func (s Set) Len() int { return len(s.m) }

// Source returns the source URL that raw stands for, when raw is an http
// or https address of a source in the set (give or take what
// normalisation ignores: case, fragment, tracking parameters, a trailing
// slash). What is returned is the source's own URL, so a link made of it
// opens what was read, not what was written.
func (s Set) Source(raw string) (string, bool) {
	canon, ok := httpURL(raw)
	if !ok || len(s.m) == 0 {
		return "", false
	}
	n, err := search.NormalizeURL(canon)
	if err != nil {
		return "", false
	}
	src, ok := s.m[n]
	return src, ok
}

// httpURL parses raw as an absolute http or https URL with a host and
// nothing a link target may not hold (blanks, control characters, angle
// brackets, quotes), and returns it re-encoded.
func httpURL(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.ContainsFunc(raw, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("<>\"`|\\{}^", r) || r == utf8.RuneError
	}) {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u.String(), true
}

// Host is the host of an http(s) URL, lower case and without "www.", or
// "" when raw is none.
func Host(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
}

// foldDots maps the dots browsers accept in a host name (full-width, the
// ideographic full stop, the half-width one) to ".", and compatibility
// forms (full-width letters) to ASCII, so that an address written with
// them is seen as one.
func foldDots(s string) string {
	s = norm.NFKC.String(s)
	return dotFolder.Replace(strings.ToLower(s))
}

var (
	dotFolder = strings.NewReplacer("。", ".", "．", ".", "｡", ".")
	dotFanger = strings.NewReplacer(".", "[.]", "。", "[.]", "．", "[.]", "｡", "[.]")
)

// schemeHostRE is an address with a scheme ("https://host…"); hostRE a
// bare host name ("accounts.google.com": labels and a top-level domain of
// letters) or an IPv4 address.
var (
	schemeHostRE = regexp.MustCompile(`[a-z][a-z0-9+.-]*:/+([^\s/?#\\]*)`)
	hostRE       = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.@-])((?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+[a-z][a-z0-9-]*[a-z0-9]|\d{1,3}(?:\.\d{1,3}){3})`)
)

// Addresses returns the hosts that text shows: those of URLs written in
// it and host names that stand alone.
func Addresses(text string) []string {
	t := foldDots(text)
	var hosts []string
	for _, m := range schemeHostRE.FindAllStringSubmatch(t, -1) {
		h := m[1]
		if i := strings.LastIndex(h, "@"); i >= 0 {
			// user@host: people read the part before the @.
			hosts = append(hosts, strings.TrimPrefix(h[:i], "www."))
			h = h[i+1:]
		}
		if j := strings.LastIndex(h, ":"); j >= 0 && !strings.Contains(h, "]") {
			h = h[:j]
		}
		hosts = append(hosts, strings.TrimPrefix(h, "www."))
	}
	for _, m := range hostRE.FindAllStringSubmatch(schemeHostRE.ReplaceAllString(t, " "), -1) {
		hosts = append(hosts, strings.TrimPrefix(m[1], "www."))
	}
	return hosts
}

// ShowsOtherAddress reports whether a link's visible text shows an
// address that is not the one the link opens: a URL or host name of
// another host ("https://accounts.google.com/…" on a link to
// evil.example). Text that names the target's host, or a domain the
// target's host belongs to, shows no other address.
func ShowsOtherAddress(text, target string) bool {
	th := Host(target)
	for _, h := range Addresses(text) {
		if h == "" {
			continue
		}
		if th == "" || h != th && !strings.HasSuffix(th, "."+h) {
			return true
		}
	}
	return false
}

// schemeRE is a URL's scheme at the start of a token.
var (
	webSchemeRE = regexp.MustCompile(`(?i)\b(?:h(tt)ps?|f(t)p)(?::|%3a)`)
	schemeRE    = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]{0,31}):`)
)

// Defang shows an address as inert text: http(s) and ftp schemes become
// hxxp(s) and fxp, another scheme's colon is bracketed (javascript[:]…),
// and every dot is bracketed (evil[.]example), so no renderer links it; the
// result holds no markdown link syntax either.
func Defang(raw string) string {
	s := CleanText(raw)
	s = webSchemeRE.ReplaceAllStringFunc(s, func(m string) string {
		if m[0] == 'h' || m[0] == 'H' {
			return m[:1] + "xx" + m[3:] // http -> hxxp
		}
		return m[:1] + "x" + m[2:] // ftp -> fxp
	})
	if m := schemeRE.FindStringSubmatch(s); m != nil && !strings.HasPrefix(strings.ToLower(m[1]), "hxxp") && !strings.EqualFold(m[1], "fxp") {
		s = m[1] + "[:]" + s[len(m[0]):]
	}
	s = dotFanger.Replace(s)
	return breakMarkup(s)
}

// CleanText removes control characters other than newline and tab and
// bidirectional overrides (which can make an address read backwards),
// and repairs invalid UTF-8.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, s)
}

// bareStartRE finds where a bare address starts: what autolinkers (GFM,
// Slack) turn into links without any markup.
var bareStartRE = regexp.MustCompile(`(?i)(?:https?|ftp)://|www\.`)

// Bare returns the spans [start, end) of the bare addresses in s: from an
// http(s):// , ftp:// or www. to the next blank or angle bracket (or a
// rune of stop), without the punctuation that ends a sentence and an
// unbalanced closing parenthesis, as GFM's autolinker ends them.
func Bare(s string, stop func(rune) bool) [][2]int {
	var spans [][2]int
	for off := 0; off < len(s); {
		loc := bareStartRE.FindStringIndex(s[off:])
		if loc == nil {
			break
		}
		start := off + loc[0]
		end := start
		for end < len(s) {
			r, n := utf8.DecodeRuneInString(s[end:])
			if unicode.IsSpace(r) || r == '<' || r == '>' || unicode.IsControl(r) || stop != nil && stop(r) {
				break
			}
			end += n
		}
		end = trimURLEnd(s[start:end]) + start
		if end <= start+loc[1]-loc[0] {
			off = start + loc[1] - loc[0]
			continue
		}
		spans = append(spans, [2]int{start, end})
		off = end
	}
	return spans
}

// trimURLEnd returns the length of u without trailing punctuation and
// unbalanced closing brackets.
func trimURLEnd(u string) int {
	for len(u) > 0 {
		c := u[len(u)-1]
		switch {
		case strings.IndexByte("?!.,:;*_~'\"`", c) >= 0:
			u = u[:len(u)-1]
		case c == ')' && strings.Count(u, "(") < strings.Count(u, ")"),
			c == ']' && strings.Count(u, "[") < strings.Count(u, "]"):
			u = u[:len(u)-1]
		default:
			return len(u)
		}
	}
	return 0
}

// wordJoiner (U+2060) is invisible; put after a "<", "&" or "]" it keeps
// what follows from being markup.
const wordJoiner = "\u2060"

// Placeholders stand for pieces of the output while the text around them
// is rewritten; they cannot come from the input (stripped first).
const (
	phKeep  = '\uE020' // a kept link, restored last
	phInert = '\uE021' // inert text, swept with the rest
	phEnd   = '\uE022'
)

func isPlaceholder(r rune) bool { return r >= phKeep && r <= phEnd }

// inlineLinkRE is a markdown inline link or image with simple text (no
// brackets inside) and an optional title: [text](url), ![alt](<url> "t").
var inlineLinkRE = regexp.MustCompile(`(!?)\[([^\[\]\n]*)\]\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?\s*\)`)

// emailRE is an e-mail address, which GFM and Slack link (mailto:) by
// themselves; its dots are bracketed like a defanged host's.
var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`)

// angleRE is text in angle brackets: an autolink (<https://…>), Slack's
// <url|text>, <!channel> and <@U…>, or an HTML tag.
var angleRE = regexp.MustCompile(`<([^<>\n]*)>`)

// uriRE is the start of an absolute URI.
var uriRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]{1,31}:`)

// Markdown rewrites a markdown text (a report or its summary) so that only
// the sources in read are links, each opening the source's own URL:
//   - an inline link or image to a source stays a link ([text](url)); one
//     whose text shows another address becomes "text (<url>)"; an image
//     becomes a link (no remote image is loaded);
//   - any other link or image, autolink, Slack link (<url|text>) or bare
//     address becomes inert text: "text (hxxps://evil[.]example/x)",
//     javascript: and data: targets included;
//   - an e-mail address is shown with its dots bracketed (no mailto:
//     link);
//   - Slack's <!channel>, <!here>, <@U…>, <#C…>, raw HTML and character
//     references are broken with an invisible word joiner after the < or
//     &, and so is whatever link syntax is left (nested brackets,
//     reference links and their definitions) after the ]. Footnotes
//     ([^1], [^1]: …) stay.
func Markdown(md string, read Set) string {
	md = strings.Map(func(r rune) rune {
		if isPlaceholder(r) {
			return -1
		}
		return r
	}, CleanText(md))
	var keep, inert []string
	put := func(kind rune, s string) string {
		list := &inert
		if kind == phKeep {
			list = &keep
		}
		*list = append(*list, s)
		return string(kind) + strconv.Itoa(len(*list)-1) + string(phEnd)
	}
	md = replaceAllIndex(inlineLinkRE, md, func(m []string) string {
		text, dest := m[2], strings.TrimSpace(m[3])
		dest = strings.TrimSuffix(strings.TrimPrefix(dest, "<"), ">")
		shown := strings.TrimSpace(text)
		if src, ok := read.Source(dest); ok {
			// An image of a source is shown as a link to it.
			switch {
			case shown == "" || sameAddress(shown, src):
				return put(phKeep, "<"+src+">")
			case ShowsOtherAddress(shown, src) || len(Bare(shown, nil)) > 0:
				// Text that shows an address, other than the one it
				// opens, is words beside the link.
				return put(phInert, inertText(shown, read)) + " (" + put(phKeep, "<"+src+">") + ")"
			}
			return put(phKeep, "["+inertText(shown, read)+"]("+src+")")
		}
		if shown == "" {
			return put(phInert, Defang(dest))
		}
		return put(phInert, inertText(shown, read)+" ("+Defang(dest)+")")
	})
	md = angles(md, read, put)
	md = bare(md, read, put)
	md = emailRE.ReplaceAllStringFunc(md, func(m string) string {
		return put(phInert, strings.ReplaceAll(m, ".", "[.]"))
	})
	md = restore(md, phInert, inert)
	md = breakMarkup(md)
	return restore(md, phKeep, keep)
}

// inertText is a piece of text (a link's visible text) with its addresses
// defanged (or linked, when they are sources) and its markup broken.
func inertText(s string, read Set) string {
	return Markdown(s, read)
}

// angles rewrites text in angle brackets: an autolink or Slack link to a
// source stays a link, any other becomes inert; the rest (<!channel>,
// HTML) is broken later by breakMarkup.
func angles(s string, read Set, put func(rune, string) string) string {
	return replaceAllIndex(angleRE, s, func(m []string) string {
		inner := m[1]
		if !uriRE.MatchString(inner) {
			return m[0]
		}
		target, label, _ := strings.Cut(inner, "|")
		label = strings.TrimSpace(label)
		if src, ok := read.Source(target); ok {
			if label == "" || sameAddress(label, src) {
				return put(phKeep, "<"+src+">")
			}
			return put(phInert, inertText(label, read)) + " (" + put(phKeep, "<"+src+">") + ")"
		}
		if label == "" {
			return put(phInert, Defang(target))
		}
		return put(phInert, inertText(label, read)+" ("+Defang(target)+")")
	})
}

// bare rewrites the bare addresses of s: a source's is kept (as the
// source's URL), any other defanged.
func bare(s string, read Set, put func(rune, string) string) string {
	return ReplaceBare(s, read, isPlaceholder,
		func(src string) string { return put(phKeep, src) },
		func(u string) string { return put(phInert, Defang(u)) })
}

// ReplaceBare rewrites each bare address of s (as Bare finds them, stop
// ending an address): one of a source read is replaced by source(its
// source's URL), any other by other(the address as written).
func ReplaceBare(s string, read Set, stop func(rune) bool, source, other func(string) string) string {
	spans := Bare(s, stop)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		u := s[sp[0]:sp[1]]
		if src, ok := read.Source(u); ok {
			b.WriteString(source(src))
		} else {
			b.WriteString(other(u))
		}
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// sameAddress reports whether text is the address target, give or take
// the scheme, "www." and a trailing slash.
func sameAddress(text, target string) bool {
	n := func(s string) string {
		s = strings.TrimSpace(foldDots(s))
		s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
		return strings.TrimSuffix(strings.TrimPrefix(s, "www."), "/")
	}
	return n(text) == n(target)
}

// breakMarkup puts a word joiner after every "<" that could open a tag, an
// autolink or a Slack mention, after every "&" of a character reference
// and after the "]" of any link syntax (](, ][, ]: — but not a footnote's
// definition [^1]:), so no renderer makes markup of them.
func breakMarkup(s string) string {
	if !strings.ContainsAny(s, "<&]") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		next := ""
		if i+1 < len(s) {
			next = s[i+1:]
		}
		if strings.HasPrefix(next, wordJoiner) || next == "" {
			continue
		}
		if opensMarkup(s, i, next) {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

// opensMarkup reports whether s[i], followed by next, could make markup:
// a "<" before anything but a space or "=", an "&" of a character
// reference other than the plain ones, a "]" before "(", "[" or ":" (not
// ending a footnote's label before its ":").
func opensMarkup(s string, i int, next string) bool {
	switch s[i] {
	case '<':
		r, _ := utf8.DecodeRuneInString(next)
		return !unicode.IsSpace(r) && r != '='
	case '&':
		m := charRefRE.FindString(next)
		return m != "" && !plainRefs[strings.ToLower(m)]
	case ']':
		rest := strings.TrimLeft(next, " \t")
		if rest == "" || strings.IndexByte("([:", rest[0]) < 0 {
			return false
		}
		return rest[0] != ':' || !footnoteBefore(s[:i])
	}
	return false
}

// charRefRE is the rest of a character reference after its "&"; the
// plain ones (&amp; &lt; &gt; &quot; &nbsp;) cannot make markup and stay.
var (
	charRefRE = regexp.MustCompile(`^(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});`)
	plainRefs = map[string]bool{"amp;": true, "lt;": true, "gt;": true, "quot;": true, "apos;": true, "nbsp;": true}
)

// footnoteBefore reports whether the bracket that a "]" closes, on the
// same line, opens a footnote label ("[^…").
func footnoteBefore(s string) bool {
	i := strings.LastIndexAny(s, "[\n")
	return i >= 0 && s[i] == '[' && strings.HasPrefix(s[i+1:], "^")
}

// replaceAllIndex is regexp's ReplaceAllStringFunc with the submatches,
// and with a word joiner before a replacement that directly follows a "]"
// (so that "[a]" and a rewritten "[b](…)" do not join into a link).
func replaceAllIndex(re *regexp.Regexp, s string, f func(m []string) string) string {
	locs := re.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		b.WriteString(s[last:loc[0]])
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[loc[2*i]:loc[2*i+1]]
			}
		}
		if loc[0] > 0 && s[loc[0]-1] == ']' {
			b.WriteString(wordJoiner)
		}
		b.WriteString(f(m))
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// restore puts back the pieces of kind.
func restore(s string, kind rune, pieces []string) string {
	if len(pieces) == 0 {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexRune(s, kind)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+utf8.RuneLen(kind):]
		j := strings.IndexRune(s, phEnd)
		n, _ := strconv.Atoi(s[:j])
		b.WriteString(pieces[n])
		s = s[j+utf8.RuneLen(phEnd):]
	}
}
