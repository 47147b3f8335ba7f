package extract

import (
	"strings"

	"golang.org/x/net/html"
)

// maxPostBoxAnchors bounds the email fields, and the links to author
// pages, read per page (see findPostBoxes), so that a page of many forms
// or links costs at most this many climbs of maxDepth of each.
const maxPostBoxAnchors = 64

// findPostBoxes returns the sign-up boxes (see signupBoxes) and the
// author's boxes (see authorBoxesOf) of a page that declares itself a
// post, from one walk that collects the email fields and the links to
// author pages outside sentences.
func (e *extractor) findPostBoxes(body *html.Node, total textSize) (signups, authors map[*html.Node]bool) {
	if e.sections {
		return nil, nil
	}
	var inputs, links []*html.Node
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > maxDepth || len(inputs) >= maxPostBoxAnchors && len(links) >= maxPostBoxAnchors {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch {
			case emailField(c):
				if len(inputs) < maxPostBoxAnchors {
					inputs = append(inputs, c)
				}
			case authorLink(c):
				if len(links) < maxPostBoxAnchors && !e.inSentence(c) {
					links = append(links, c)
				}
			default:
				walk(c, depth+1)
			}
		}
	}
	walk(body, 0)
	return e.signupBoxes(inputs, body, total), e.authorBoxesOf(links, body, total)
}

// maxSignupText is the most text (weighted characters, see weightedLen)
// a sign-up box holds. On the five training sets of the cross-validation
// by site, 300, 600, 1200, 2500 and 5000 all raised wcxb-dev's F1 on five
// of five; 2500 and 5000 raised it most on most folds (equal at four
// decimals), so the smaller.
const maxSignupText = 2500

// emailField reports an input that asks for an email address.
func emailField(n *html.Node) bool {
	if n.Data != "input" {
		return false
	}
	switch strings.ToLower(attr(n, "type")) {
	case "email":
		return true
	case "", "text":
		for _, a := range []string{"name", "id", "placeholder"} {
			v := strings.ToLower(attr(n, a))
			if strings.Contains(v, "email") || strings.Contains(v, "e-mail") {
				return true
			}
		}
	}
	return false
}

// signupBoxes returns the sign-up boxes of a page that declares itself a
// post: for each field asking for an email address, its largest ancestor
// holding at most maxSignupText of text, under a quarter of the page's
// and not most of its prose. In a post, such a box is a newsletter's
// or a membership's pitch ("Join 800,000 subscribers", "Get more travel
// content"), whatever its class names; its pitch is prose, so the box is
// often scored as part of the article. Only posts: on the other pages
// (a shop's "tell me when it is back in stock" beside the description, a
// service's contact form) the box's neighbours are content, and F1 fell
// on four of the five training sets with the rule on every page; keeping
// only the nearest ancestor with text there changed almost nothing.
func (e *extractor) signupBoxes(inputs []*html.Node, body *html.Node, total textSize) map[*html.Node]bool {
	var boxes map[*html.Node]bool
	for _, in := range inputs {
		if box := e.boxAround(in, body, total, maxSignupText); box != nil {
			if boxes == nil {
				boxes = map[*html.Node]bool{}
			}
			boxes[box] = true
		}
	}
	return boxes
}

// boxAround returns the largest ancestor of n under body that holds at
// most maxText of text, under a quarter of the page's and not most of its
// prose, and not both the post's headline and its body (see
// postParts), or nil. It climbs at most maxDepth parents. A box grown to
// the headline and the body is the post itself: a short post whose byline
// links to its author's page, or whose comment form asks for an email
// address, is smaller than those bounds. A box holding the headline
// alone is the post's header.
func (e *extractor) boxAround(n, body *html.Node, total textSize, maxText int) *html.Node {
	var box *html.Node
	var headline, text bool
	post := postParts{e.normTitle, e.sizeOf}
	for c, p, d := n, n.Parent, 0; p != nil && p != body && d <= maxDepth; c, p, d = p, p.Parent, d+1 {
		size := e.sizeOf(p)
		if size.all > maxText || size.all*4 >= total.all || total.para > 0 && size.para*2 > total.para {
			break
		}
		h, t := post.beside(p, c)
		headline, text = headline || h, text || t
		if headline && text {
			break
		}
		box = p
	}
	return box
}

// postParts finds a post's headline and body beside a box (see
// boxAround): normTitle is the page's title (see normText), sizeOf the
// extractor's measure of an element's text.
type postParts struct {
	normTitle string
	sizeOf    func(*html.Node) textSize
}

// beside reports whether a child of p other than c holds the post's
// headline, and whether one holds its body, within postDepth levels: an
// h1 or a heading of the page's title (a theme that writes the site's
// name in the h1), and prose in an element named as content (see
// classVerdict).
func (pp postParts) beside(p, c *html.Node) (headline, text bool) {
	for s := p.FirstChild; s != nil; s = s.NextSibling {
		if s != c && s.Type == html.ElementNode {
			h, t := pp.holds(s, postDepth)
			headline, text = headline || h, text || t
		}
	}
	return headline, text
}

// postDepth bounds how deep postParts looks.
const postDepth = 12

// holds reports whether n holds the post's headline and whether it
// holds its body (see beside) within depth levels.
func (pp postParts) holds(n *html.Node, depth int) (headline, text bool) {
	switch n.Data {
	case "h1":
		return true, false
	case "h2", "h3":
		return pp.normTitle != "" && normText(textOf(n)) == pp.normTitle, false
	}
	if n.Data != "p" && pp.sizeOf(n).paras > 0 {
		v, _ := classVerdict(n, true)
		text = v > 0
	}
	if depth == 0 {
		return false, text
	}
	for c := n.FirstChild; c != nil && (!headline || !text); c = c.NextSibling {
		if c.Type == html.ElementNode {
			h, t := pp.holds(c, depth-1)
			headline, text = headline || h, text || t
		}
	}
	return headline, text
}
