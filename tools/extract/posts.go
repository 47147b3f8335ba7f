package extract

import "golang.org/x/net/html"

// A thread's posts look like teaser cards (see findCards) to the measures
// that find those: each holds a prose run or two and a run of link text.
// But a teaser's link is the title of the page it points to, and a post's
// links are its signature: the author's name, the post's date, a
// permalink number. Taken for teasers, the replies add no value and the
// root shrinks to the one post long enough not to look like a card,
// usually the first.

// Limits of a thread of posts (see postList): the length (weighted
// characters) from which a run of link text is a title, the share of the
// cards (in percent) that must have one for the list to be teasers, and
// the share of the page's prose the list must hold to be the page's
// thread rather than a box of reviews beside it. Chosen on the training
// folds of the cross-validation by site among 8, 12, 16 and 20 (title),
// 50 and 67 (titled share) and 25 and 40 (prose share): four of the five
// folds chose 16, 67 and 40 (one of them tied with 16, 50 and 40), the
// fifth 16, 67 and 25.
const (
	minTitleLink       = 16
	titledCardsPercent = 67
	threadProsePercent = 40
)

// postList reports whether the cards of the given tag among list's
// children are a thread's posts rather than teasers: fewer than
// titledCardsPercent of them have a run of link text as long as a title,
// and together they hold threadProsePercent of the page's prose. List
// items and table rows are left to be teasers: a list of references or
// quotes, a table of named entries, is not a thread. top is the scored
// root (the body), found on the first call from list's ancestors and kept
// for the next ones, so that the cost of a call is that of list's
// children.
func postList(list *html.Node, tag string, isCard func(*html.Node) bool, scores map[*html.Node]*nodeScore, top **html.Node) bool {
	if tag == "li" || tag == "tr" {
		return false
	}
	if *top == nil {
		*top = list
		for d := 0; d < maxDepth && (*top).Parent != nil && scores[(*top).Parent] != nil; d++ {
			*top = (*top).Parent
		}
	}
	if scores[list].good*100 < scores[*top].good*threadProsePercent {
		return false
	}
	n, titled := 0, 0
	for c := list.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == tag && isCard(c) {
			n++
			if scores[c].linkRun >= minTitleLink {
				titled++
			}
		}
	}
	return titled*100 < n*titledCardsPercent
}

// postHeader reports the header of one post of a thread: inside an
// article element with another article among its postSiblings nearest
// element siblings on either side (the posts of a thread, with an ad or a
// notice between two of them). It holds the post's author and date, which
// are part of the post, and is read like any other element. With the
// dates of <time> elements rendered as text (not as the link text of the
// permalink they anchor), F1 rose on all five training sets of the
// cross-validation by site; either change alone lowered it on three to
// five.
func postHeader(n *html.Node) bool {
	for p, d := n.Parent, 0; p != nil && d < postHeaderDepth; p, d = p.Parent, d+1 {
		if p.Type == html.ElementNode && p.Data == "article" {
			return siblingTag(p, "article", postSiblings)
		}
	}
	return false
}

// postHeaderDepth is how many ancestors of a header postHeader climbs to
// find its post, so that a page of many headers nested deep costs a
// bounded walk per header. On the corpora no post header sits deeper
// than this in its article: with the limit at maxDepth no page's score
// differed.
const postHeaderDepth = 12

// postSiblings is how many element siblings on each side postHeader
// looks at.
const postSiblings = 3

// siblingTag reports whether one of the nearest k element siblings of n
// on either side is a tag element.
func siblingTag(n *html.Node, tag string, k int) bool {
	for _, next := range []func(*html.Node) *html.Node{
		func(s *html.Node) *html.Node { return s.PrevSibling },
		func(s *html.Node) *html.Node { return s.NextSibling },
	} {
		seen := 0
		for s := next(n); s != nil && seen < k; s = next(s) {
			if s.Type != html.ElementNode {
				continue
			}
			if s.Data == tag {
				return true
			}
			seen++
		}
	}
	return false
}
