package extract

import (
	"net/url"
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
	// goodRuns and linkRuns count the prose runs and the runs that are
	// mostly link text (titles, "read more") under the element.
	goodRuns, linkRuns int
	// pos sums the positive values only, of prose runs and of runs
	// without links: a rail of teasers, a linked title and a summary
	// ending in a "Full Article" link each, is worth a little per teaser
	// and is no prose that descend would lose (reuters.com's story stayed
	// with its rail). Short lines without links (a fact box) still count:
	// counting prose runs only cost recall on the snippets check half.
	pos int
	// link is the length of the link text.
	link int
	// linkRun is the length of the longest run that is mostly link
	// text: an item's title, or a post's signature (see postList).
	linkRun int
}

// blockValue rates one run of text: its non-link length, less its link
// text, less a fixed cost per run, so that long paragraphs count for a
// container and menus and teaser lists count against it.
func (b blockStat) value(cost int) int {
	return b.chars - 2*b.link - cost
}

// defaultBlockCost is what every run of text costs its containers: a run
// shorter than this counts against them (Tuning.BlockCost).
const defaultBlockCost = 10

// chooseRoot picks the element whose runs of text have the greatest total
// value (see blockStat.value): the smallest container holding the
// article's prose and little else. Ties go to the deepest element, and a
// child holding descendPercent of its parent's value is preferred to the
// parent. Teaser cards (see findCards) add no positive value.
// It also returns wide, root or the container of root and the sections
// beside it (see below), and the length of all of body's text, which
// bounds that of any rendering of it.
func (e *extractor) chooseRoot(body *html.Node) (root, wide *html.Node, all int) {
	scores := scoreBlocks(body, e.cards, e.opts.Tuning.BlockCost)
	e.pruned = scores
	if s := scores[body]; s != nil {
		all = s.good + s.bad
	}
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
	var story *soleH1
	if !e.sections && !e.discussion {
		story = &e.headline
	}
	best = descend(best, scores, e.opts.Tuning.DescendPercent, story)
	// A page of sections (a service's hero, its features, its questions)
	// puts its prose in siblings, and the root holds one of them. wide is
	// the nearest container that holds at least ascendGainPercent of the
	// root's prose and adds little link text, widened again while that
	// holds: the sections without the menus beside them.
	root = best
	for depth := 0; depth < maxDepth && best != body && best.Parent != nil; depth++ {
		p := best.Parent
		sb := scores[best]
		for p != body && p.Parent != nil && scores[p] != nil && scores[p].good == sb.good && scores[p].bad == sb.bad {
			p = p.Parent
		}
		sp := scores[p]
		if sp == nil || sb == nil || sb.value <= 0 {
			break
		}
		addAll := sp.good + sp.bad - sb.good - sb.bad
		if sp.good*100 < sb.good*ascendGainPercent || (sp.link-sb.link)*100 > addAll*ascendLinkPercent {
			break
		}
		// Only now, as it costs a pass over the cards: the teasers'
		// prose does not count.
		if (sp.good-e.teaserProse(p, best))*100 < sb.good*ascendGainPercent {
			break
		}
		best = p
	}
	return root, best, all
}

// descend returns the child of best, or a descendant, that holds percent
// of its value and nearly all its positive value, or best. A container scores above its
// best child when what it adds besides is worth a little more than
// nothing: a teaser, a short blurb, a notice. When one child holds nearly
// all the value, and nearly all the positive value (so that prose
// cancelled out by a link list is not lost), that child is the article.
// A list read whole (see listWhole) is not left for one of its items,
// nor any container for one paragraph: the story's heading or the link
// line beside it are the story's (a container whose one paragraph is
// its root's text is cleaned like any root, see rootBlocks). When story
// is not nil (a page that declares a post), the child that is the story
// beside boxes of prose is taken too (see soleH1.child).
func descend(best *html.Node, scores map[*html.Node]*nodeScore, percent int, story *soleH1) *html.Node {
	for depth := 0; depth < maxDepth; depth++ {
		bs := scores[best]
		if bs == nil || bs.value <= 0 {
			break
		}
		var next *html.Node
		for c := best.FirstChild; c != nil; c = c.NextSibling {
			if s := scores[c]; s != nil && s.value*100 >= bs.value*percent && s.pos*100 >= bs.pos*descendPosPercent {
				next = c
				break
			}
		}
		if next == nil && story != nil {
			next = story.child(best, scores)
		}
		if next == nil || next.Data == "li" && listWhole(best, next, scores) || next.Data == "p" {
			break
		}
		best = next
	}
	if best.Data == "li" && best.Parent != nil && listWhole(best.Parent, best, scores) {
		best = best.Parent
	}
	return best
}

// child returns the child of n that holds the page's only h1 and
// storyDescendPercent of n's value and positive value. chooseRoot asks it
// on a page that declares a post: the child is the story, beside boxes of
// prose that are not part of it (a cookie or consent notice, a
// newsletter's pitch, an "about us" blurb) and hold too much text for the
// story to hold defaultDescendPercent of its container. It returns nil
// otherwise.
func (s *soleH1) child(n *html.Node, scores map[*html.Node]*nodeScore) *html.Node {
	sn := scores[n]
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if cs := scores[c]; cs != nil && s.holds(c) {
			if cs.value*100 >= sn.value*storyDescendPercent && cs.pos*100 >= sn.pos*storyDescendPercent {
				return c
			}
			return nil
		}
	}
	return nil
}

// storyDescendPercent is the share of its container's value the child
// holding the headline must hold (see soleH1.child): a majority. 75, 65,
// 50 and 35 were measured on the dev folds and the tune half: each step
// down to 50 moved pages up only (a story beside a consent box holds 79 %
// of their container), 35 moved none.
const storyDescendPercent = 50

// listWhole reports whether list, a ul or ol, is read whole rather than
// through item, one of its items: another item holds text that is not
// mostly link text, and the other items together add value rather than
// cost it (a page's references or a list of links beside one long item
// cost it). A post written as a list (a film's title as one item,
// its summary as the next) is the list; a long item among links (a menu,
// a list of stories) is not.
func listWhole(list, item *html.Node, scores map[*html.Node]*nodeScore) bool {
	if list.Data != "ul" && list.Data != "ol" || scores[list] == nil || scores[item] == nil || scores[list].value < scores[item].value {
		return false
	}
	for c := list.FirstChild; c != nil; c = c.NextSibling {
		if s := scores[c]; c != item && c.Data == "li" && s != nil && s.good+s.bad > 0 && s.link*2 < s.good+s.bad {
			return true
		}
	}
	return false
}

// teaserProse returns the prose of the teasers under p and not under
// inner, a descendant of p: cards (see findCards) whose text starts with a
// link, a story's title. A section ending in a call to action is not one.
// The sums are made once, in one pass over the cards and their ancestors.
func (e *extractor) teaserProse(p, inner *html.Node) int {
	if e.teasers == nil {
		e.teasers = map[*html.Node]int{}
		for c := range e.cards {
			if !titledCard(c) {
				continue
			}
			para := e.sizeOf(c).para
			for a, d := c, 0; a != nil && d <= maxDepth; a, d = a.Parent, d+1 {
				e.teasers[a] += para
			}
		}
	}
	return e.teasers[p] - e.teasers[inner]
}

// titledCard reports whether the first text of n is inside a link.
func titledCard(n *html.Node) bool {
	var first func(m *html.Node, inLink bool, depth int) (found, linked bool)
	first = func(m *html.Node, inLink bool, depth int) (bool, bool) {
		if depth > maxDepth {
			return false, false
		}
		for c := m.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				if strings.TrimSpace(c.Data) != "" {
					return true, inLink
				}
			case html.ElementNode:
				if c.Data == "script" || c.Data == "style" {
					continue
				}
				if f, l := first(c, inLink || c.Data == "a", depth+1); f {
					return true, l
				}
			}
		}
		return false, false
	}
	_, linked := first(n, false, 0)
	return linked
}

// ascendGainPercent and ascendLinkPercent bound the widening of the root
// (see chooseRoot): the container must hold this share of the root's prose
// (in percent), and what it adds may be link text up to this share. Chosen
// on the training folds of the cross-validation by site among 150, 175,
// 200, 250 and 300 (gain) and 5, 10, 15, 20 and 30 (links): four of the
// five folds chose 200 and 20, the fifth 200 and 10.
const (
	ascendGainPercent = 200
	ascendLinkPercent = 20
)

// defaultDescendPercent (Tuning.DescendPercent) and descendPosPercent are
// the shares of its parent's value and positive value a child must hold for
// chooseRoot to prefer the child.
const (
	defaultDescendPercent = 95
	descendPosPercent     = 80
)

// scoreBlocks splits the text under body into runs of inline text, judges
// each run good (prose) or bad, and sums both kinds for every element.
// Runs inside the elements of cards (teasers, see findCards) add no
// positive value: they must not draw the root towards them.
func scoreBlocks(body *html.Node, cards map[*html.Node]bool, cost int) map[*html.Node]*nodeScore {
	s := blockScorer{body: body, cards: cards, cost: cost, scores: map[*html.Node]*nodeScore{}, owner: body}
	s.walk(body, false, 0)
	s.flush()
	return s.scores
}

// blockScorer holds the state of scoreBlocks: the run being read, the
// block element that owns it, and how many cards it is inside.
type blockScorer struct {
	body   *html.Node
	cards  map[*html.Node]bool
	cost   int
	scores map[*html.Node]*nodeScore
	cur    blockStat
	owner  *html.Node
	inCard int
}

// flush ends the current run and adds it to its owner and the owner's
// ancestors up to body.
func (s *blockScorer) flush() {
	if s.cur.chars > 0 && s.owner != nil {
		s.addRun()
	}
	s.cur = blockStat{}
}

func (s *blockScorer) addRun() {
	cur := s.cur
	g := cur.good()
	v := cur.value(s.cost)
	if s.inCard > 0 {
		v = min(v, 0)
	}
	linkRun := cur.link*2 > cur.chars
	for a := s.owner; a != nil; a = a.Parent {
		ns := s.scores[a]
		if ns == nil {
			ns = &nodeScore{}
			s.scores[a] = ns
		}
		ns.value += v
		if g || cur.link == 0 {
			ns.pos += max(v, 0)
		}
		ns.link += cur.link
		if g {
			ns.good += cur.chars
			ns.goodRuns++
		} else {
			ns.bad += cur.chars
		}
		if linkRun {
			ns.linkRuns++
			ns.linkRun = max(ns.linkRun, cur.chars)
		}
		if a == s.body {
			break
		}
	}
}

// walk reads the text under n into runs: a block element or a card ends
// the run before it and after it, and owns the runs inside it.
func (s *blockScorer) walk(n *html.Node, inLink bool, depth int) {
	if depth > maxDepth {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			l := weightedLen(c.Data)
			s.cur.chars += l
			if inLink {
				s.cur.link += l
			}
			s.cur.punct += sentencePunct(c.Data)
		case html.ElementNode:
			switch c.Data {
			case "script", "style", "template":
				continue
			}
			card, block := s.cards[c], blockTags[c.Data]
			if !card && !block {
				s.walk(c, inLink || c.Data == "a", depth+1)
				continue
			}
			s.flush()
			if card {
				s.inCard++
			}
			saved := s.owner
			if block {
				s.owner = c
			}
			s.walk(c, inLink, depth+1)
			s.flush()
			s.owner = saved
			if card {
				s.inCard--
			}
		}
	}
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
	appendText(&b, n, 1<<16, func(c *html.Node) bool {
		if c.Data == "script" || c.Data == "style" {
			return false
		}
		if blockTags[c.Data] {
			b.WriteByte(' ')
		}
		return true
	})
	return collapseSpace(b.String())
}

// appendText writes the text of n's subtree to b, no deeper than maxDepth
// and, when limit > 0, not into subtrees reached once b holds more than
// limit bytes. elem sees each element first and says whether to read it.
func appendText(b *strings.Builder, n *html.Node, limit int, elem func(c *html.Node) bool) {
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > maxDepth || (limit > 0 && b.Len() > limit) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				b.WriteString(c.Data)
			case html.ElementNode:
				if elem(c) {
					walk(c, depth+1)
				}
			}
		}
	}
	walk(n, 0)
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

// defaultMinContent is the default of Tuning.MinContent.
const defaultMinContent = 250

// rootItemLink is the length (weighted characters) from which a block
// that is all link text is kept inside the chosen container: a linked
// title, a list of named links the article points to (see cleanBlocks).
// Menus' entries are shorter. Chosen on the training folds of the
// cross-validation by site among 15, 20, 25, 30, 40, 60, 80 and never
// (every fold chose 25).
const rootItemLink = 25

// Defaults of Tuning.BroadPercent and Tuning.MinItemLink.
const (
	defaultBroadPercent = 25
	defaultMinItemLink  = 15
)

// content returns the blocks of the main content under the pruned body:
// those of the chosen container (see chooseRoot) or, when that holds only
// a small share of the page's text, those of the whole page with the
// titles of its items kept.
func (e *extractor) content(body *html.Node, title string) []block {
	root, wide, all := e.chooseRoot(body)
	if s := e.headlineStory(root); s != nil {
		root, wide = s, s
	}
	e.titled = pageTitle{e.normTitle, e.base}.story(root)
	links0, seen0 := len(e.links), len(e.seenLinks)
	var raw []block
	if wide == root {
		for _, l := range e.leadBefore(root) {
			raw = append(raw, e.render(l)...)
		}
	}
	blocks := rootBlocks(append(raw, e.render(root)...), title, e.base, !e.sections)
	if root == body || chars(blocks)*100 >= all*e.opts.Tuning.BroadPercent || e.singlePost(root) {
		// The whole page could not render to more than all.
		return e.widen(blocks, wide, root, title, links0, seen0)
	}
	links, seen := len(e.links), len(e.seenLinks)
	broad := cleanBlocks(e.renderItems(body), title, e.opts.Tuning.MinItemLink)
	if chars(blocks)*100 >= chars(broad)*e.opts.Tuning.BroadPercent {
		e.links = e.links[:links]
		if len(e.seenLinks) != seen {
			clear(e.seenLinks)
			for _, l := range e.links {
				e.seenLinks[l] = true
			}
		}
		return e.widen(blocks, wide, root, title, links0, seen0)
	}
	return broad
}

// pageTitle is what a heading that titles the page shows: the page's
// title (see normText), or a link to the page itself, base.
type pageTitle struct {
	norm string
	base *url.URL
}

// story reports whether root, or its container, follows a heading that
// is the page's title, by its text or by linking to the page itself (a
// post's title as its permalink): root is that story's body, however
// short (a post of two paragraphs under its title).
func (t pageTitle) story(root *html.Node) bool {
	for n, d := root, 0; n != nil && n.Data != "body" && d < 2; n, d = n.Parent, d+1 {
		for c := n.PrevSibling; c != nil; c = c.PrevSibling {
			if c.Type == html.ElementNode && headingTag(c.Data) && t.heading(c) {
				return true
			}
		}
	}
	return false
}

// heading reports a heading whose text is the page's title or whose link
// leads to the page itself.
func (t pageTitle) heading(h *html.Node) bool {
	if t.norm != "" && normText(textOf(h)) == t.norm {
		return true
	}
	a := firstElement(h, "a", 3)
	if a == nil || t.base == nil {
		return false
	}
	self := strings.TrimSuffix(resolve(t.base, t.base.String()), "/")
	return self != "" && strings.TrimSuffix(resolve(t.base, attr(a, "href")), "/") == self
}

// headingTag reports h1 to h6.
func headingTag(tag string) bool {
	return len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6'
}

// headlineStory returns the story under root that holds the page's
// headline, when root holds several stories: two or more article
// elements with prose, of which only one holds an h1. A news page that loads the next story below the one
// asked for (an endless scroll written out by the server) is that one
// story. Only on a page that declares a post and not a thread (see
// declare): a thread's posts are its content. It returns nil otherwise.
func (e *extractor) headlineStory(root *html.Node) *html.Node {
	if e.sections || e.discussion {
		return nil
	}
	var stories []*html.Node
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		for c := n.FirstChild; c != nil && depth < storyDepth; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.Data == "article" {
				if e.sizeOf(c).paras > 0 {
					stories = append(stories, c)
				}
				continue
			}
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	// Siblings of one tag and class, one holding the h1, are not read as
	// stories: a body split into blocks of a page builder is written so
	// (paigebrunton.com's dev page lost half its body).
	return headlined(stories)
}

// headlined returns the one of two or more stories that holds an h1, or
// nil when none or several do.
func headlined(stories []*html.Node) *html.Node {
	if len(stories) < 2 {
		return nil
	}
	var found *html.Node
	for _, s := range stories {
		if firstElement(s, "h1", 8) != nil {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// singlePost reports whether root is in a short post under the page's
// headline: the nearest article element holding root holds an h1 (or
// held one before pruning, when root holds prose) and no
// other heading nor article outside root (the post's own subheadings)
// and, when root holds minContinuedRuns prose runs or more (a story, not
// the blurb of a page of items), outside teaser cards (see findCards).
// Such a page is that post (a quote, a note, a short news story) followed
// by other posts or by teasers of other stories, not a page of items,
// though root holds little of the page's text (mensagensreflexao.com.br's
// dev page: F1 0.32 with the whole page, 1.00 with the post). A page of
// items has headings of its items, or is not one article holding the
// headline. On a page that declares a post (see declare), a story of
// several prose runs need not be in an article element: root holding the
// page's only h1 is that story, and otherwise the nearest container of
// root holding an h1 is read as that article.
func (e *extractor) singlePost(root *html.Node) bool {
	story := e.sizeOf(root).paras >= minContinuedRuns
	for n, d := root, 0; n != nil && d <= maxDepth; n, d = n.Parent, d+1 {
		if n.Type == html.ElementNode && n.Data == "article" {
			// The article's h1 may have gone with a header pruned as
			// furniture; it still titles root when root holds prose (a
			// root of links alone, under a pruned headline, is a list).
			titled := firstElement(n, "h1", h1ArticleDepth) != nil || e.headline.articles[n] && e.sizeOf(root).paras > 0
			return titled && !e.holdsTagOutside(n, root, story, postInnerTags, 12)
		}
	}
	if !story || e.sections {
		return false
	}
	// A story whose container holds the page's one h1 (found before
	// pruning: a header named as furniture may have gone since) is that
	// story, whatever follows it outside (a trade magazine's news story
	// followed by four times its text in boxes of other stories).
	if e.headline.holds(root) {
		return true
	}
	// A page that declares a post and writes its story without an
	// article element: the nearest container of root holding an h1 is
	// the story's.
	for n, d := root, 0; n != nil && n.Data != "body" && d < storyDepth; n, d = n.Parent, d+1 {
		if n != root && firstElement(n, "h1", 8) != nil {
			return !e.holdsTagOutside(n, root, true, postInnerTags, 12)
		}
	}
	return false
}

// storyDepth bounds how far above the root singlePost looks for the
// story's headline.
const storyDepth = 6

// postInnerTags are the elements a single post (see singlePost) does not
// hold: the headings and articles of items.
var postInnerTags = map[string]bool{"h2": true, "h3": true, "article": true}

// holdsTagOutside reports whether a descendant of n, down to depth levels,
// not in root and, with skipCards, not in a teaser card (see findCards),
// is an element of one of tags.
func (e *extractor) holdsTagOutside(n, root *html.Node, skipCards bool, tags map[string]bool, depth int) bool {
	if depth < 0 {
		return false
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c != root && (!skipCards || !e.cards[c]) && (tags[c.Data] || e.holdsTagOutside(c, root, skipCards, tags, depth-1)) {
			return true
		}
	}
	return false
}

// widen returns the blocks of wide, the container of root with the
// sections beside it (see chooseRoot), in place of root's blocks; the
// links found are those of wide.
func (e *extractor) widen(blocks []block, wide, root *html.Node, title string, links, seen int) []block {
	if wide == root {
		return blocks
	}
	e.links = e.links[:links]
	if len(e.seenLinks) != seen {
		clear(e.seenLinks)
		for _, l := range e.links {
			e.seenLinks[l] = true
		}
	}
	return rootBlocks(e.render(wide), title, e.base, !e.sections)
}

func chars(blocks []block) int {
	n := 0
	for _, b := range blocks {
		n += b.chars
	}
	return n
}

// soleH1 follows the h1s of a page: how many there are, the first, its
// ancestors while it is the only one, and the articles holding any.
type soleH1 struct {
	count     int
	first     *html.Node
	ancestors map[*html.Node]bool
	// articles are the article elements holding an h1, of any count,
	// within h1ArticleDepth: the header that holds a story's headline is
	// often pruned as furniture, and the story's article must still be
	// read as holding its headline (see singlePost).
	articles map[*html.Node]bool
	// firstChain is the first h1 and its ancestors, nearest first, as
	// they were before pruning: pruning may detach the header holding it.
	firstChain []*html.Node
}

// h1ArticleDepth is how far above an h1 its article is looked for: the
// depth at which singlePost finds an h1 in an article.
const h1ArticleDepth = 8

// note records an h1 of the page, in document order.
func (s *soleH1) note(h *html.Node) {
	s.count++
	if s.first == nil {
		s.first = h
		for a, d := h, 0; a != nil && d <= maxDepth; a, d = a.Parent, d+1 {
			s.firstChain = append(s.firstChain, a)
		}
	}
	for a, d := h.Parent, 1; a != nil && d <= h1ArticleDepth; a, d = a.Parent, d+1 {
		if a.Type == html.ElementNode && a.Data == "article" {
			if s.articles == nil {
				s.articles = map[*html.Node]bool{}
			}
			s.articles[a] = true
			break
		}
	}
	if s.count > 1 {
		s.ancestors = nil
		return
	}
	s.ancestors = map[*html.Node]bool{}
	for a, d := h.Parent, 0; a != nil && d <= maxDepth; a, d = a.Parent, d+1 {
		s.ancestors[a] = true
	}
}

// holds reports whether n holds the page's h1, when it has one only.
func (s *soleH1) holds(n *html.Node) bool {
	return s.count == 1 && s.ancestors[n]
}
