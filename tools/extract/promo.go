package extract

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// Promotional lines inside an article's body: a lead-in in capitals
// ("SEE MORE:", "DON'T MISS", "READ MORE") followed by links to other
// stories, in the same paragraph or in the next one. They are the site's,
// not the article's.

// maxLeadIn bounds the length, in letters, of a promotional lead-in; its
// words are at most maxLeadInWords.
const (
	maxLeadIn      = 24
	maxLeadInWords = 4
)

// promoLinkShare is the least share of a promotional line's text, after
// its lead-in, that is link text.
const promoLinkShare = 0.75

// promoLine reports a paragraph that is a promotional line: a lead-in in
// capitals and then mostly links. A paragraph that is the lead-in alone,
// followed by a paragraph of mostly links, is one too; then next is that
// paragraph (to drop with it).
func promoLine(n *html.Node) (promo bool, next *html.Node) {
	if n.Data != "p" {
		return false, nil
	}
	var lead, rest inlineStat
	var leadText strings.Builder
	seenLink := false
	var walk func(n *html.Node, inLink bool, depth int)
	walk = func(n *html.Node, inLink bool, depth int) {
		for c := n.FirstChild; c != nil && depth < 8; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				k := letters(c.Data)
				switch {
				case inLink:
					rest.chars += k
					rest.link += k
				case seenLink:
					rest.chars += k
				default:
					lead.chars += k
					if leadText.Len() < 4*maxLeadIn {
						leadText.WriteString(c.Data)
					}
				}
			case c.Type == html.ElementNode && c.Data == "a":
				seenLink = true
				walk(c, true, depth+1)
			case c.Type == html.ElementNode:
				walk(c, inLink, depth+1)
			}
		}
	}
	walk(n, false, 0)
	if lead.chars == 0 {
		return linkedLeadIn(n, rest), nil
	}
	if !leadIn(leadText.String()) {
		return false, nil
	}
	if rest.chars > 0 {
		return float64(rest.link) >= promoLinkShare*float64(rest.chars), nil
	}
	// The lead-in alone: the links follow in the next paragraph.
	s := n.NextSibling
	for ; s != nil; s = s.NextSibling {
		if s.Type == html.ElementNode && (s.Data != "p" || strings.TrimSpace(textOf(s)) != "") {
			break
		}
	}
	if s == nil || s.Data != "p" && s.Data != "ul" {
		return false, nil
	}
	all, link := linkLetters(s, false, 0)
	if all == 0 || float64(link) < promoLinkShare*float64(all) {
		return false, nil
	}
	return true, s
}

// linkedLeadIn reports a paragraph, whose text is st, that opens with a
// link whose own text opens with a lead-in and a colon ("READ MORE: Title
// of another story", written inside the link) and is mostly link text.
// The colon is asked for: a headline in capitals opening a link is not a
// lead-in.
func linkedLeadIn(p *html.Node, st inlineStat) bool {
	if st.chars == 0 || float64(st.link) < promoLinkShare*float64(st.chars) {
		return false
	}
	a := firstElement(p, "a", 4)
	if a == nil {
		return false
	}
	t := collapseSpace(textOf(a))
	i := strings.IndexByte(t, ':')
	return i > 0 && i < 4*maxLeadIn && leadIn(t[:i])
}

// leadIn reports a promotional lead-in: two to four words in capitals (at
// least three capital letters, no small ones), and perhaps a colon.
func leadIn(s string) bool {
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ":|-–—»>›"))
	// One word ("READ:", "REFERENCE:", "SOURCE:") as often introduces
	// the article's own further reading, which the ground truth of the
	// broad pages keeps.
	if words := len(strings.Fields(s)); words < 2 || words > maxLeadInWords {
		return false
	}
	upper, n := 0, 0
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			return false
		case unicode.IsUpper(r):
			upper++
		}
		if unicode.IsLetter(r) {
			n++
		}
	}
	return upper >= 3 && n <= maxLeadIn
}

// letters counts the letters and digits of s.
func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// linkLetters counts the letters of n's text, and those inside links.
func linkLetters(n *html.Node, inLink bool, depth int) (all, link int) {
	for c := n.FirstChild; c != nil && depth < 8; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			k := letters(c.Data)
			all += k
			if inLink {
				link += k
			}
		case html.ElementNode:
			a, l := linkLetters(c, inLink || c.Data == "a", depth+1)
			all, link = all+a, link+l
		}
	}
	return all, link
}

// Headlines of other stories set in capitals as links between an
// article's paragraphs (a paragraph that is one link, all in capitals).
// One such paragraph may be the article's own (a call to action, a
// section's title); two or more on a page are the site's promotions.

// minCapsPromos is how many all-capitals link paragraphs a page needs for
// them to be read as promotions; minCapsWords is the least number of words
// of each.
const (
	minCapsPromos = 2
	minCapsWords  = 5
)

// findCapsPromos returns the paragraphs under body that are a link in
// capitals (see capsLinkLine), when there are at least minCapsPromos.
func findCapsPromos(body *html.Node) map[*html.Node]bool {
	var found []*html.Node
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		for c := n.FirstChild; c != nil && depth < maxDepth; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.Data == "p" {
				if capsLinkLine(c) {
					found = append(found, c)
				}
				continue
			}
			walk(c, depth+1)
		}
	}
	walk(body, 0)
	if len(found) < minCapsPromos {
		return nil
	}
	m := make(map[*html.Node]bool, len(found))
	for _, p := range found {
		m[p] = true
	}
	return m
}

// capsLinkLine reports a paragraph that is a link in capitals: nearly all
// its letters are in links, none is small, and it has at least
// minCapsWords words.
func capsLinkLine(p *html.Node) bool {
	var all, link, words int
	lower := false
	var walk func(n *html.Node, inLink bool, depth int)
	walk = func(n *html.Node, inLink bool, depth int) {
		for c := n.FirstChild; c != nil && depth < 8 && !lower; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				inWord := false
				for _, r := range c.Data {
					switch {
					case unicode.IsLower(r):
						lower = true
						return
					case unicode.IsLetter(r) || unicode.IsDigit(r):
						all++
						if inLink {
							link++
						}
						if !inWord {
							words++
						}
						inWord = true
					case unicode.IsSpace(r):
						inWord = false
					}
				}
			case html.ElementNode:
				walk(c, inLink || c.Data == "a", depth+1)
			}
		}
	}
	walk(p, false, 0)
	return !lower && words >= minCapsWords && link*10 >= all*9
}

// machineLabel reports an element whose whole text is a name written for
// scripts, not readers: one token joined by hyphens or underscores
// ("narrow-browser-and-phone") that repeats the value of one of its own
// data attributes (data-name="narrow-browser-and-phone") or ends one of
// its classes, as the labels of a script's breakpoint detector or a debug
// panel are.
func machineLabel(n *html.Node) bool {
	c := n.FirstChild
	if c == nil || c.NextSibling != nil || c.Type != html.TextNode || len(n.Attr) == 0 {
		return false
	}
	switch n.Data {
	case "a", "code", "kbd", "samp", "var", "tt", "dfn", "abbr":
		// A link titled with its target's name, an identifier.
		return false
	}
	t := strings.TrimSpace(c.Data)
	if len(t) < 3 || len(t) > 80 || strings.ContainsAny(t, " \t\n") || !strings.ContainsAny(t, "-_") {
		return false
	}
	for _, a := range n.Attr {
		if a.Key == "class" {
			for _, cl := range strings.Fields(a.Val) {
				if strings.HasSuffix(cl, t) {
					return true
				}
			}
			continue
		}
		if a.Val == t && strings.HasPrefix(a.Key, "data-") {
			return true
		}
	}
	return false
}

// disclaimerBox reports an element that opens with a heading saying
// "Disclaimer" and holds less than a quarter of the page's text: the
// site's standing notice under every article, not the article.
func (e *extractor) disclaimerBox(n *html.Node, total textSize) bool {
	if n.Data != "div" && n.Data != "section" {
		return false
	}
	c := n.FirstChild
	for c != nil && c.Type != html.ElementNode {
		c = c.NextSibling
	}
	if c == nil || len(c.Data) != 2 || c.Data[0] != 'h' || c.Data[1] < '1' || c.Data[1] > '6' {
		return false
	}
	t := strings.ToLower(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(textOf(c)), ":")))
	return t == "disclaimer" && e.sizeOf(n).all*4 < total.all
}
