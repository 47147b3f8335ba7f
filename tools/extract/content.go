package extract

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// blockTags start a new block of text.
var blockTags = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "body": true,
	"caption": true, "center": true, "dd": true, "details": true, "dialog": true, "div": true,
	"dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true, "footer": true,
	"form": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"header": true, "hgroup": true, "hr": true, "li": true, "main": true, "nav": true, "ol": true,
	"p": true, "pre": true, "section": true, "summary": true, "table": true, "tbody": true,
	"td": true, "tfoot": true, "th": true, "thead": true, "tr": true, "ul": true,
	"html": true, "legend": true, "menu": true, "object": true, "output": true, "video": true,
}

// blockStat summarises one run of inline text while choosing the root.
type blockStat struct {
	chars, link, punct int
}

// good reports whether a run of text reads like prose rather than
// furniture: long enough, few links, or a sentence.
func (b blockStat) good() bool {
	if b.chars == 0 || b.link*10 > b.chars*4 {
		return false
	}
	return b.chars >= 80 || (b.chars >= 30 && b.punct > 0 && b.link*10 < b.chars)
}

// nodeScore accumulates the good and bad text under an element.
type nodeScore struct {
	good, bad int
	value     int // sum of blockValue
}

// blockValue rates one run of text: its non-link length, less its link
// text, less a fixed cost per run, so that long paragraphs count for a
// container and menus and teaser lists count against it.
func (b blockStat) value() int {
	return b.chars - 2*b.link - blockCost
}

// blockCost is what every run of text costs its containers: a run shorter
// than this counts against them.
const blockCost = 10

// chooseRoot picks the element whose runs of text have the greatest total
// value (see blockStat.value): the smallest container holding the
// article's prose and little else. Ties go to the deepest element.
func (e *extractor) chooseRoot(body *html.Node) *html.Node {
	scores := scoreBlocks(body)
	best, bestScore := body, -1<<62
	var pick func(n *html.Node, depth int)
	pick = func(n *html.Node, depth int) {
		if depth > maxDepth {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				if _, ok := scores[c]; ok {
					pick(c, depth+1)
				}
			}
		}
		if s := scores[n]; s != nil {
			if v := s.value; v > bestScore {
				best, bestScore = n, v
			}
		}
	}
	pick(body, 0)
	return best
}

// scoreBlocks splits the text under body into runs of inline text, judges
// each run good (prose) or bad, and sums both kinds for every element.
func scoreBlocks(body *html.Node) map[*html.Node]*nodeScore {
	scores := map[*html.Node]*nodeScore{}
	var cur blockStat
	var owner *html.Node
	flush := func() {
		if cur.chars > 0 && owner != nil {
			g := cur.good()
			v := cur.value()
			for a := owner; a != nil; a = a.Parent {
				s := scores[a]
				if s == nil {
					s = &nodeScore{}
					scores[a] = s
				}
				s.value += v
				if g {
					s.good += cur.chars
				} else {
					s.bad += cur.chars
				}
				if a == body {
					break
				}
			}
		}
		cur = blockStat{}
	}
	var walk func(n *html.Node, inLink bool, depth int)
	walk = func(n *html.Node, inLink bool, depth int) {
		if depth > maxDepth {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				l := weightedLen(c.Data)
				cur.chars += l
				if inLink {
					cur.link += l
				}
				cur.punct += sentencePunct(c.Data)
			case html.ElementNode:
				switch c.Data {
				case "script", "style", "noscript", "template":
					continue
				}
				if blockTags[c.Data] {
					flush()
					saved := owner
					owner = c
					walk(c, inLink, depth+1)
					flush()
					owner = saved
				} else {
					walk(c, inLink || c.Data == "a", depth+1)
				}
			}
		}
	}
	owner = body
	walk(body, false, 0)
	flush()
	return scores
}

// sentencePunct counts sentence punctuation in s.
func sentencePunct(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case '.', ',', '!', '?', ';', ':', '。', '、', '，', '！', '？', '；', '：', '।':
			n++
		}
	}
	return n
}

// textOf returns the collapsed text of n's subtree.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > maxDepth || b.Len() > 1<<16 {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				b.WriteString(c.Data)
			case html.ElementNode:
				if c.Data == "script" || c.Data == "style" {
					continue
				}
				if blockTags[c.Data] {
					b.WriteByte(' ')
				}
				walk(c, depth+1)
			}
		}
	}
	walk(n, 0)
	return collapseSpace(b.String())
}

// collapseSpace replaces runs of white space by one space and trims.
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
