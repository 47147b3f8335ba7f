package bot

import (
	"regexp"
	"strconv"
	"strings"

	"deepresearch/agent/links"
	"deepresearch/research"
)

// Slack renders standard markdown only in markdown blocks, and refuses those
// where a file is shared (files.completeUploadExternal answers
// internal_error). Text for the other blocks is mrkdwn, whose syntax differs:
// *bold*, _italic_, <url|text> links, no headings. mrkdwnFromMarkdown turns
// the model's markdown (a report summary) into mrkdwn that is safe to show:
// untrusted text is escaped as Escape does, only the sources the run read
// are links, each showing its real target (so its visible text can never
// pretend to be another address), and every other address is shown
// defanged (hxxps://evil[.]example), which Slack does not link.

var (
	mdLinkRE     = regexp.MustCompile(`!?\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"\n]*")?\s*\)`)
	mdHeadingRE  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	mdBulletRE   = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	mdBoldRE     = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	mdItalicRE   = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*?)\*($|[^\w*])`)
	mdStrikeRE   = regexp.MustCompile(`~~([^~\n]+)~~`)
	mdFootnoteRE = regexp.MustCompile(`\[\^([^\]\s]+)\]`)
)

// Private-use runes stand for mrkdwn's own markup while the text around it
// is escaped; they cannot come from the input (stripped first). A link is
// phLinkL, its index among the line's links, phLinkR.
const (
	phBold   = '\uE000'
	phItalic = '\uE001'
	phStrike = '\uE002'
	phLinkL  = '\uE003'
	phLinkR  = '\uE004'
)

func isLinkPlaceholder(r rune) bool { return r == phLinkL || r == phLinkR }

// summarySet is the set of addresses a result's summary may link: the
// sources its run read.
func summarySet(res research.Result) links.Set { return links.NewSet(res.Links...) }

// summaryMarkdown is a result's summary for a markdown block: only the
// sources read are links (links.Markdown), and the text escaped, within n
// runes.
func summaryMarkdown(res research.Result, n int) string {
	return truncateEscaped(links.Markdown(res.Summary, summarySet(res)), n)
}

// mrkdwnFromMarkdown converts standard markdown to escaped Slack mrkdwn in
// which only the addresses in read are links.
func mrkdwnFromMarkdown(md string, read links.Set) string {
	md = strings.Map(func(r rune) rune {
		if r >= 0xE000 && r <= 0xE004 {
			return -1
		}
		return r
	}, md)
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	inCode := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			lines[i] = "```"
			continue
		}
		if inCode {
			lines[i] = Escape(inertAddresses(line))
			continue
		}
		lines[i] = mrkdwnLine(line, read)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func mrkdwnLine(line string, read links.Set) string {
	heading := false
	if m := mdHeadingRE.FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	if m := mdBulletRE.FindStringSubmatch(line); m != nil {
		line = m[1] + "• " + m[2]
	}
	// Inline code keeps its text literally (escaped), nothing inside is
	// markup, and no address in it is live.
	parts := strings.Split(line, "`")
	for j := range parts {
		if j%2 == 1 && j < len(parts)-1 {
			parts[j] = Escape(inertAddresses(parts[j]))
			continue
		}
		parts[j] = mrkdwnInline(parts[j], read)
	}
	line = strings.Join(parts, "`")
	if heading && strings.TrimSpace(line) != "" {
		line = "*" + strings.Trim(line, "*") + "*"
	}
	return line
}

func mrkdwnInline(s string, read links.Set) string {
	var targets []string
	link := func(src string) string {
		targets = append(targets, src)
		return string(phLinkL) + strconv.Itoa(len(targets)-1) + string(phLinkR)
	}
	s = mdFootnoteRE.ReplaceAllString(s, "[$1]")
	s = mdLinkRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := mdLinkRE.FindStringSubmatch(m)
		return linkPlaceholder(sub[1], sub[2], read, link)
	})
	s = liveAddresses(s, read, link)
	s = mdBoldRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := mdBoldRE.FindStringSubmatch(m)
		inner := sub[1] + sub[2]
		return string(phBold) + inner + string(phBold)
	})
	s = mdItalicRE.ReplaceAllString(s, "${1}"+string(phItalic)+"${2}"+string(phItalic)+"${3}")
	s = mdStrikeRE.ReplaceAllString(s, string(phStrike)+"${1}"+string(phStrike))
	s = Escape(s)
	s = strings.NewReplacer(string(phBold), "*", string(phItalic), "_", string(phStrike), "~").Replace(s)
	return restoreLinks(s, targets)
}

// restoreLinks replaces the link placeholders of s by mrkdwn links.
func restoreLinks(s string, targets []string) string {
	if len(targets) == 0 {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexRune(s, phLinkL)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexRune(s[i:], phLinkR)
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		n, _ := strconv.Atoi(s[i+len(string(phLinkL)) : i+j])
		b.WriteString(s[:i])
		// The URL inside <…> must not end the link or start a label early.
		safe := strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C", " ", "%20").Replace(targets[n])
		b.WriteString("<" + safe + ">")
		s = s[i+j+len(string(phLinkR)):]
	}
}

// linkPlaceholder renders a markdown link. A link to a source read shows
// its real target: the link itself is the target, and the text, when it
// says something else, stands beside it as plain words. A link to anything
// else is inert text: its words and its target defanged.
func linkPlaceholder(text, target string, read links.Set, link func(string) string) string {
	text = strings.TrimSpace(text)
	src, ok := read.Source(target)
	if !ok {
		if text == "" {
			return links.Defang(target)
		}
		return text + " (" + links.Defang(target) + ")"
	}
	if text == "" || sameTarget(text, src) {
		return link(src)
	}
	return text + " (" + link(src) + ")"
}

// liveAddresses turns the bare addresses of s into links when they are
// sources read, and defangs the others (Slack links bare URLs by itself).
func liveAddresses(s string, read links.Set, link func(string) string) string {
	return links.ReplaceBare(s, read, isLinkPlaceholder, link, links.Defang)
}

// inertAddresses defangs every bare address of s (text shown as code).
func inertAddresses(s string) string {
	return liveAddresses(s, links.Set{}, nil)
}

// sameTarget reports whether a link's visible text is its target, give or
// take the scheme and a trailing slash.
func sameTarget(text, target string) bool {
	norm := func(s string) string {
		s = strings.TrimSpace(strings.ToLower(s))
		s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
		return strings.TrimSuffix(s, "/")
	}
	return norm(text) == norm(target)
}

// splitLines cuts text into parts of at most n runes at line breaks (a
// longer line is cut where it must be), so that mrkdwn markup on a line
// stays whole in one section.
func splitLines(text string, n int) []string {
	var parts []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, cur.String())
			cur.Reset()
			curLen = 0
		}
	}
	for _, line := range strings.Split(text, "\n") {
		r := []rune(line)
		for len(r) > n {
			flush()
			parts = append(parts, string(r[:n]))
			r = r[n:]
		}
		need := len(r)
		if curLen > 0 {
			need++
		}
		if curLen+need > n {
			flush()
			need = len(r)
		}
		if curLen > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(string(r))
		curLen += need
	}
	flush()
	return parts
}
