package extract

import (
	"strings"

	"golang.org/x/net/html"
)

// maxAuthorBoxText is the most text (weighted characters) an author box
// holds, and minAuthorBoxText the least. On the five training sets of the
// cross-validation by site, caps of 250, 400, 600, 800, 1000, 1200 and
// 1600 all raised wcxb-dev's F1 on five of five; 800 raised it most on
// four (1000 and up lost a listing of posts' cards). Floors of 50, 100
// and 200 moved it by under 0.0001; 200 was lowest on all five.
const (
	maxAuthorBoxText = 800
	minAuthorBoxText = 100
)

// authorLink reports a link to an author's page: rel="author", or a
// path through an /author/ or /authors/ folder (WordPress and most
// publishing systems).
func authorLink(n *html.Node) bool {
	if n.Data != "a" {
		return false
	}
	if strings.Contains(" "+strings.ToLower(attr(n, "rel"))+" ", " author ") {
		return true
	}
	h := strings.ToLower(attr(n, "href"))
	return strings.Contains(h, "/author/") || strings.Contains(h, "/authors/")
}

// authorBoxesOf returns the author boxes of a page that declares itself
// a post: for each link to an author's page that is not part of a
// sentence (see inSentence), its largest ancestor of at most
// maxAuthorBoxText (see boxAround), when that holds prose and at least
// minAuthorBoxText and is not an item of the page (a card of a list of
// posts names its author too). Such a box is the writer's bio under or
// beside the article ("Jane Roe is a reporter who covers ..."), the
// byline with its date and reading time, or a "written by / reviewed by"
// panel; the ground truth of the broad corpus leaves them out, and
// their class names vary too much to name them (saboxplugin, athr-box,
// css-3t4da0). A link inside a sentence cites a writer in the text.
// Without the sentence test, a review quoting other writers lost its
// quotations; without the item test, a blog's list of posts lost its
// cards.
func (e *extractor) authorBoxesOf(links []*html.Node, body *html.Node, total textSize) map[*html.Node]bool {
	var boxes map[*html.Node]bool
	for _, a := range links {
		box := e.boxAround(a, body, total, maxAuthorBoxText)
		if box == nil || boxes[box] {
			continue
		}
		size := e.sizeOf(box)
		if size.all < minAuthorBoxText || size.paras == 0 || e.cards[box] || e.pageItem(box, total) {
			continue
		}
		if boxes == nil {
			boxes = map[*html.Node]bool{}
		}
		boxes[box] = true
	}
	return boxes
}

// inSentence reports a link inside a paragraph, list item, quotation or
// cell (within three levels) that holds more than three times its text:
// a link in the running text.
func (e *extractor) inSentence(a *html.Node) bool {
	link := e.sizeOf(a).all
	for p, d := a.Parent, 0; p != nil && d < 4; p, d = p.Parent, d+1 {
		switch p.Data {
		case "p", "li", "blockquote", "td", "dd":
			return e.sizeOf(p).all > 3*link+20
		}
	}
	return false
}
