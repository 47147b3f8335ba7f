package citation

import (
	"fmt"
	"regexp"
	"strings"
)

// Other citation styles models write, turned into footnotes before the
// check: numbered references with a list of sources, and markdown links to
// the source in citation position.
var (
	// "[1] Title URL", "[1]: Title, URL", "- [1] Title - URL"
	numRefRE = regexp.MustCompile(`^\s{0,3}(?:[-*+]\s+)?\[(\d{1,3})\][:.]?\s+(.*\S)\s*$`)
	// "1. Title - URL", "1) [Title](URL)"
	numListRE = regexp.MustCompile(`^\s{0,3}(\d{1,3})[.)]\s+(.*\S)\s*$`)
	// "[1]", "[1, 2]", "[1,2]" in the text (not a link's text: "[1](…)")
	numMarkerRE = regexp.MustCompile(`\[(\d{1,3}(?:\s*[,，、]\s*\d{1,3})*)\]`)
	mdLink      = `\[([^\[\]\n]+)\]\(((?:https?|doc|mcp|file|deepresearch)://[^\s()]+(?:\([^\s()]*\)[^\s()]*)?)(?:\s+"[^"\n]*")?\)`
	mdLinkRE    = regexp.MustCompile(mdLink)
	// "([Title](url))", "([A](u1); [B](u2))", and the full-width parentheses
	parenLinksRE = regexp.MustCompile(`[ \t]*[(（]\s*` + mdLink + `(?:\s*[,;、；]\s*` + mdLink + `)*\s*[)）]`)
	// a link right after a closing quotation mark
	quoteLinkRE = regexp.MustCompile(`(["”’」』])[ \t]*` + mdLink)
)

// normalizeStyles rewrites numbered references and markdown-link citations
// as footnotes ("[^1]" with "[^1]: Title, URL"), leaving footnotes, code and
// ordinary links alone.
func normalizeStyles(report string) string {
	lines := strings.Split(report, "\n")
	code, footnotes := codeAndFootnotes(lines)
	refLine := numberedRefs(lines, code, footnotes)
	defined := defineCitedRefs(lines, refLine, citedNumbers(lines, code, refLine))
	links := linkCiter{seen: map[string]bool{}}
	for i, ln := range lines {
		if code[i] || defRE.MatchString(ln) {
			continue
		}
		if len(defined) > 0 {
			ln = replaceNumMarkers(ln, defined)
		}
		lines[i] = links.rewrite(ln)
	}
	out := strings.Join(lines, "\n")
	if len(links.defs) > 0 {
		out = strings.TrimRight(out, "\n") + "\n\n" + strings.Join(links.defs, "\n") + "\n"
	}
	return out
}

// codeAndFootnotes marks the lines inside code fences (the fences too) and
// collects the labels of the footnotes defined outside them.
func codeAndFootnotes(lines []string) (code []bool, footnotes map[string]bool) {
	code = make([]bool, len(lines))
	footnotes = map[string]bool{}
	in := false
	for i, ln := range lines {
		if strings.HasPrefix(strings.TrimSpace(ln), "```") {
			in = !in
			code[i] = true
			continue
		}
		code[i] = in
		if m := defRE.FindStringSubmatch(ln); !in && m != nil {
			footnotes[m[1]] = true
		}
	}
	return code, footnotes
}

// numberedRefs finds the lines of numbered references: "[n] … URL"
// anywhere, "n. … URL" under a References heading, outside code and not
// numbered like a footnote. It maps each such line to its number.
func numberedRefs(lines []string, code []bool, footnotes map[string]bool) map[int]string {
	refLine := map[int]string{} // line → number
	inRefs := false             // under a References heading
	for i, ln := range lines {
		if t := strings.TrimSpace(ln); !code[i] && strings.HasPrefix(t, "#") {
			inRefs = refHdrRE.MatchString(t)
		}
		if code[i] || defRE.MatchString(ln) {
			continue
		}
		m := numRefRE.FindStringSubmatch(ln)
		if m == nil && inRefs {
			m = numListRE.FindStringSubmatch(ln)
		}
		if m != nil && !footnotes[m[1]] && urlRE.MatchString(m[2]) {
			refLine[i] = m[1]
		}
	}
	return refLine
}

// citedNumbers are the numbers cited as "[n]" or "[n, m]" in the text
// (outside code and the reference lines; not a link's text).
func citedNumbers(lines []string, code []bool, refLine map[int]string) map[string]bool {
	cited := map[string]bool{}
	for i, ln := range lines {
		if _, isRef := refLine[i]; code[i] || isRef {
			continue
		}
		for _, m := range numMarkerRE.FindAllStringSubmatchIndex(ln, -1) {
			if !linkText(ln, m[1]) {
				for _, n := range splitNumbers(ln[m[2]:m[3]]) {
					cited[n] = true
				}
			}
		}
	}
	return cited
}

// defineCitedRefs rewrites the reference lines whose number is cited as
// footnote definitions and returns the numbers so defined.
func defineCitedRefs(lines []string, refLine map[int]string, cited map[string]bool) map[string]bool {
	defined := map[string]bool{}
	for i, n := range refLine {
		if !cited[n] {
			continue
		}
		m := numRefRE.FindStringSubmatch(lines[i])
		if m == nil {
			m = numListRE.FindStringSubmatch(lines[i])
		}
		lines[i] = "[^" + n + "]: " + m[2]
		defined[n] = true
	}
	return defined
}

// linkCiter turns markdown links in citation position into footnotes
// labelled by their URL, one definition per URL.
type linkCiter struct {
	seen map[string]bool
	defs []string // the definitions to append, in order of first use
}

// cite returns the marker for a link to url and defines it the first time.
func (l *linkCiter) cite(title, url string) string {
	if !l.seen[url] {
		l.seen[url] = true
		l.defs = append(l.defs, fmt.Sprintf("[^%s]: %s, %s", url, cleanTitle(title), url))
	}
	return "[^" + url + "]"
}

// rewrite replaces the parenthesised links and the links right after a
// closing quotation mark in ln by footnote markers.
func (l *linkCiter) rewrite(ln string) string {
	ln = parenLinksRE.ReplaceAllStringFunc(ln, func(s string) string {
		var b strings.Builder
		for _, m := range mdLinkRE.FindAllStringSubmatch(s, -1) {
			b.WriteString(l.cite(m[1], m[2]))
		}
		return b.String()
	})
	return quoteLinkRE.ReplaceAllStringFunc(ln, func(s string) string {
		m := quoteLinkRE.FindStringSubmatch(s)
		return m[1] + l.cite(m[2], m[3])
	})
}

// linkText reports whether the bracket ending at i is a link's text or a
// reference definition ("[1](…)", "[1]: …").
func linkText(ln string, i int) bool {
	return i < len(ln) && (ln[i] == '(' || ln[i] == ':')
}

func splitNumbers(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == '、' || r == ' ' })
}

// replaceNumMarkers turns "[1]" and "[1, 2]" into "[^1]" and "[^1][^2]"
// when every number is a defined reference.
func replaceNumMarkers(ln string, defined map[string]bool) string {
	var b strings.Builder
	last := 0
	for _, m := range numMarkerRE.FindAllStringSubmatchIndex(ln, -1) {
		if linkText(ln, m[1]) || m[0] > 0 && ln[m[0]-1] == '!' {
			continue
		}
		ns := splitNumbers(ln[m[2]:m[3]])
		ok := len(ns) > 0
		for _, n := range ns {
			ok = ok && defined[n]
		}
		if !ok {
			continue
		}
		b.WriteString(ln[last:m[0]])
		for _, n := range ns {
			b.WriteString("[^" + n + "]")
		}
		last = m[1]
	}
	b.WriteString(ln[last:])
	return b.String()
}
