package bot

import (
	"net/url"
	"regexp"
	"strings"
)

// Slack renders standard markdown only in markdown blocks, and refuses those
// where a file is shared (files.completeUploadExternal answers
// internal_error). Text for the other blocks is mrkdwn, whose syntax differs:
// *bold*, _italic_, <url|text> links, no headings. mrkdwnFromMarkdown turns
// the model's markdown (a report summary) into mrkdwn that is safe to show:
// untrusted text is escaped as Escape does, and a link shows its real
// target, so its visible text can never pretend to be another address.

var (
	mdLinkRE     = regexp.MustCompile(`\[([^\[\]\n]*)\]\(([^()\s]+)\)`)
	mdHeadingRE  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	mdBulletRE   = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	mdBoldRE     = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	mdItalicRE   = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*?)\*($|[^\w*])`)
	mdStrikeRE   = regexp.MustCompile(`~~([^~\n]+)~~`)
	mdFootnoteRE = regexp.MustCompile(`\[\^([^\]\s]+)\]`)
)

// Private-use runes stand for mrkdwn's own markup while the text around it
// is escaped; they cannot come from the input (stripped first).
const (
	phBold   = '\uE000'
	phItalic = '\uE001'
	phStrike = '\uE002'
	phLinkL  = '\uE003'
	phLinkR  = '\uE004'
)

// mrkdwnFromMarkdown converts standard markdown to escaped Slack mrkdwn.
func mrkdwnFromMarkdown(md string) string {
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
			lines[i] = Escape(line)
			continue
		}
		lines[i] = mrkdwnLine(line)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func mrkdwnLine(line string) string {
	heading := false
	if m := mdHeadingRE.FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	if m := mdBulletRE.FindStringSubmatch(line); m != nil {
		line = m[1] + "• " + m[2]
	}
	// Inline code keeps its text literally (escaped), nothing inside is
	// markup.
	parts := strings.Split(line, "`")
	for j := range parts {
		if j%2 == 1 && j < len(parts)-1 {
			parts[j] = Escape(parts[j])
			continue
		}
		parts[j] = mrkdwnInline(parts[j])
	}
	line = strings.Join(parts, "`")
	if heading && strings.TrimSpace(line) != "" {
		line = "*" + strings.Trim(line, "*") + "*"
	}
	return line
}

func mrkdwnInline(s string) string {
	s = mdFootnoteRE.ReplaceAllString(s, "[$1]")
	s = mdLinkRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := mdLinkRE.FindStringSubmatch(m)
		return linkPlaceholder(sub[1], sub[2])
	})
	s = mdBoldRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := mdBoldRE.FindStringSubmatch(m)
		inner := sub[1] + sub[2]
		return string(phBold) + inner + string(phBold)
	})
	s = mdItalicRE.ReplaceAllString(s, "${1}"+string(phItalic)+"${2}"+string(phItalic)+"${3}")
	s = mdStrikeRE.ReplaceAllString(s, string(phStrike)+"${1}"+string(phStrike))
	s = Escape(s)
	return strings.NewReplacer(
		string(phBold), "*", string(phItalic), "_", string(phStrike), "~",
		string(phLinkL), "<", string(phLinkR), ">",
	).Replace(s)
}

// linkPlaceholder renders a markdown link: the link itself always shows its
// real target; the text, when it says something else, stands beside it as
// plain words. Only http(s) targets become links.
func linkPlaceholder(text, target string) string {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return text
	}
	// The URL inside <…> must not end the link or start a label early.
	safe := strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C", " ", "%20").Replace(target)
	link := string(phLinkL) + safe + string(phLinkR)
	if text == "" || sameTarget(text, target) {
		return link
	}
	return text + " (" + link + ")"
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
