package extract

import "golang.org/x/net/html"

// On a page of items, a card is often one link around the whole item: its
// title, its company or maker, its place, its date, its price, each in a
// block of its own. Every such block is all link text and most are short,
// so cleanBlocks would drop them as a menu's entries and keep only the
// long ones (a price range, a place with a long name). A menu's entry is
// a link inside its block, not a link around blocks: the blocks of a link
// that wraps blocks are a card's and are kept whatever their length.
// Keeping them also in the chosen container rather than only when the
// whole page is read as a page of items lowered F1 on every training fold
// of the cross-validation by site, and so did keeping only those of at
// least 3, 6 or 10 characters.

// renderItems renders body as a page of items: like render, with the
// blocks of links that wrap blocks (see blockLink) marked as cards'.
func (e *extractor) renderItems(body *html.Node) []block {
	r := &renderer{e: e, markCards: true}
	r.walk(body, false, 0)
	r.flush()
	return r.blocks
}

// blockLink reports a link that wraps a block element holding text. Links
// do not nest, so the walks of all links visit each element once.
func blockLink(a *html.Node) bool {
	found := false
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		for c := n.FirstChild; c != nil && !found && depth < maxDepth; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if blockTags[c.Data] && hasText(c, depth+1) {
				found = true
				return
			}
			walk(c, depth+1)
		}
	}
	walk(a, 0)
	return found
}

// hasText reports whether n's subtree holds text other than white space.
func hasText(n *html.Node, depth int) bool {
	if depth > maxDepth {
		return false
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			for _, r := range c.Data {
				if r > ' ' {
					return true
				}
			}
		case html.ElementNode:
			if hasText(c, depth+1) {
				return true
			}
		}
	}
	return false
}

// cardLink renders a link that wraps blocks (see blockLink) as blocks of
// their own, marked as a card's.
func (r *renderer) cardLink(a *html.Node, depth int) {
	r.flush()
	r.cardLinks++
	r.walk(a, true, depth+1)
	r.flush()
	r.cardLinks--
}
