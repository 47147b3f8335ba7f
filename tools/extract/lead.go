package extract

import (
	"slices"

	"golang.org/x/net/html"
)

// maxLeadParts is the most elements leadBefore takes as the lead.
const maxLeadParts = 3

// leadBefore returns the lead of the article whose body root is: the
// elements of prose right before root (or before the wrappers of which
// root holds all the text), in the page's order, up to the first element
// before them that is not prose (the headline, a date, a menu). News
// pages set the standfirst or the first paragraphs apart from the rest
// of the body (an "intro", a "vorspann", the free paragraphs before a
// paywall's box), and root, holding nearly all the prose, is the rest.
// The lead holds less prose than half of root's: more, and root is not
// the body. Teaser cards (see findCards) and elements whose text starts
// with a link are not a lead. A lead is set as part of the body (see
// bodyPart) or starts with the page's description (see
// leadOfDescription).
func (e *extractor) leadBefore(root *html.Node) []*html.Node {
	rs := e.pruned[root]
	if rs == nil || root.Data == "body" {
		return nil
	}
	n := outerWrapper(e.pruned, root)
	var leads []*html.Node
	prose := 0
	for s := n.PrevSibling; s != nil && len(leads) < maxLeadParts; s = s.PrevSibling {
		if s.Type != html.ElementNode {
			continue
		}
		sc := e.pruned[s]
		if sc == nil {
			continue
		}
		descLead := leadOfDescription(s, textSize{all: sc.good + sc.bad, para: sc.good, paras: sc.goodRuns}, e.normDesc)
		if !leadProse(sc) || e.cards[s] || titledCard(s) || !bodyPart(s, n) && !descLead {
			break
		}
		leads = append(leads, s)
		prose += sc.good
	}
	if prose == 0 || prose*2 > rs.good {
		return nil
	}
	slices.Reverse(leads)
	return leads
}

// outerWrapper returns the outermost ancestor of root, below body,
// that holds no text besides root's by the pruned page's scores.
func outerWrapper(scores map[*html.Node]*nodeScore, root *html.Node) *html.Node {
	rs, n := scores[root], root
	for p, d := n.Parent, 0; p != nil && p.Data != "body" && d < maxDepth; p, d = p.Parent, d+1 {
		if ps := scores[p]; ps == nil || ps.good != rs.good || ps.bad != rs.bad {
			break
		}
		n = p
	}
	return n
}

// leadProse reports whether an element's text is prose: a prose run or
// more, little text that is not, and little link text.
func leadProse(sc *nodeScore) bool {
	return sc.goodRuns > 0 && sc.bad*4 <= sc.good && sc.link*4 <= sc.good+sc.bad
}

// bodyPart reports whether s, before n, is set as part of the body n
// is: a paragraph without a class, or an element of n's tag and class.
func bodyPart(s, n *html.Node) bool {
	class := attr(s, "class")
	return s.Data == "p" && class == "" || s.Data == n.Data && class == attr(n, "class")
}
