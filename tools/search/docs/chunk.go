package docs

import (
	"strings"
	"unicode/utf8"
)

// passage is one chunk of a document before indexing.
type passage struct {
	heading string // "Section › Subsection", empty before the first heading
	text    string
}

// splitPassages cuts markdown-ish text into passages: one per section
// (ATX headings "#".."######" outside code fences start sections), and
// sections longer than max runes are split on paragraph, then sentence,
// then plain rune boundaries.
func splitPassages(text string, limit int) []passage {
	var out []passage
	var path []string // heading text per level
	var body strings.Builder
	heading := ""
	emit := func() {
		for _, p := range splitLong(strings.TrimSpace(body.String()), limit) {
			out = append(out, passage{heading: heading, text: p})
		}
		body.Reset()
	}
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		if !inFence {
			if level, h := atxHeading(trimmed); level > 0 {
				emit()
				if len(path) >= level {
					path = path[:level-1]
				}
				for len(path) < level-1 {
					path = append(path, "")
				}
				path = append(path, h)
				heading = joinHeading(path)
				continue
			}
		}
		body.WriteString(strings.TrimRight(line, " \t\r"))
		body.WriteByte('\n')
	}
	emit()
	return out
}

func atxHeading(line string) (int, string) {
	level := 0
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(line) && line[level] != ' ' && line[level] != '\t') {
		return 0, ""
	}
	h := strings.TrimSpace(line[level:])
	h = strings.TrimSpace(strings.TrimRight(h, "#"))
	if h == "" {
		return 0, ""
	}
	return level, h
}

func joinHeading(path []string) string {
	var parts []string
	for _, p := range path {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " › ")
}

// splitLong returns s in pieces of at most max runes, preferring
// paragraph boundaries, then sentence ends.
func splitLong(s string, limit int) []string {
	if s == "" {
		return nil
	}
	if utf8.RuneCountInString(s) <= limit {
		return []string{s}
	}
	var out []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
		curLen = 0
	}
	add := func(piece, sep string) {
		n, sn := utf8.RuneCountInString(piece), utf8.RuneCountInString(sep)
		if curLen > 0 && curLen+sn+n > limit {
			flush()
		}
		if curLen > 0 {
			cur.WriteString(sep)
			curLen += sn
		}
		cur.WriteString(piece)
		curLen += n
	}
	for para := range strings.SplitSeq(s, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		if utf8.RuneCountInString(para) <= limit {
			add(para, "\n\n")
			continue
		}
		for _, sent := range sentences(para) {
			for _, piece := range hardSplit(sent, limit) {
				add(piece, " ")
			}
		}
	}
	flush()
	return out
}

// sentences splits after 。．！？.!? followed by space or end, and after
// line breaks.
func sentences(s string) []string {
	var out []string
	start := 0
	runes := []rune(s)
	for i, r := range runes {
		end := false
		switch r {
		case '。', '！', '？', '．', '\n':
			end = true
		case '.', '!', '?':
			end = i+1 == len(runes) || runes[i+1] == ' ' || runes[i+1] == '\n'
		}
		if end {
			if t := strings.TrimSpace(string(runes[start : i+1])); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
	}
	if t := strings.TrimSpace(string(runes[start:])); t != "" {
		out = append(out, t)
	}
	return out
}

func hardSplit(s string, limit int) []string {
	runes := []rune(s)
	if len(runes) <= limit {
		return []string{s}
	}
	var out []string
	for len(runes) > limit {
		cut := limit
		// Prefer a space near the end so English words stay whole.
		for i := limit; i > limit*3/4; i-- {
			if runes[i] == ' ' {
				cut = i
				break
			}
		}
		out = append(out, strings.TrimSpace(string(runes[:cut])))
		runes = runes[cut:]
	}
	if t := strings.TrimSpace(string(runes)); t != "" {
		out = append(out, t)
	}
	return out
}
