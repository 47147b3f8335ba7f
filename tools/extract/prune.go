package extract

import (
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// extractor holds the state of one extraction.
type extractor struct {
	base      *url.URL
	opts      Options
	links     []string
	seenLinks map[string]bool
	// size caches the weighted text length of elements and of their prose
	// text, filled by measure before pruning.
	size map[*html.Node]textSize
}

type textSize struct{ all, para int }

func newExtractor(base *url.URL, opts Options) *extractor {
	return &extractor{base: base, opts: opts, seenLinks: map[string]bool{}}
}

// dropTags are elements that never hold main text.
var dropTags = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true,
	"canvas": true, "iframe": true, "object": true, "embed": true, "input": true, "button": true,
	"select": true, "textarea": true, "option": true, "nav": true, "aside": true, "footer": true,
	"head": true, "link": true, "meta": true, "img": true, "picture": true, "video": true,
	"audio": true, "source": true, "track": true, "map": true, "dialog": true, "label": true,
	"menu": true, "frame": true, "frameset": true, "applet": true, "title": true,
}

// dropRoles are ARIA landmark roles of page furniture.
var dropRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "menu": true, "menubar": true, "dialog": true, "alertdialog": true,
	"toolbar": true, "tablist": true, "button": true,
}

// negWords are class/id words of page furniture.
var negWords = wordSet(`comment comments commentlist disqus respond replies reply footer foot
	nav navbar navigation menu menus breadcrumb breadcrumbs share shares sharing sharer social
	socials related relatedposts recommended recommendations recommend promo promos promotion newsletter
	subscribe subscription signup sidebar widget widgets advert advertisement advertising ad ads adv
	adslot adunit sponsor sponsored banner popup modal cookie cookies consent gdpr outbrain taboola
	trending popular mostread pagination pager skip toolbar masthead login signin signup register
	byline author authors bio tags tag taglist keywords hidden sronly visuallyhidden screenreader
	caption credit credits copyright disclaimer meta metadata dateline timestamp date print
	rail aside overlay teaser teasers more subnav topnav header follow carousel slideshow
	gallery lightbox tooltip ticker alert notice offscreen invisible paywall
	jump toc hide cta shoutbox community supplemental extra extras video player`)

// strongNegWords mark furniture even in an element that also has a
// positive word (for example "entry-comments").
var strongNegWords = wordSet(`comment comments commentlist disqus respond replies footer nav navbar
	navigation menu breadcrumb breadcrumbs share sharing sharer social related relatedposts
	recommended recommendations newsletter subscribe subscription signup sidebar advert
	advertisement ad ads adslot adunit sponsor sponsored outbrain taboola trending mostread
	pagination pager toolbar cookie consent gdpr popup modal byline tags taglist caption`)

// negStems are matched as substrings of a class or id.
var negStems = []string{"comment", "disqus", "sidebar", "newsletter", "breadcrumb", "outbrain",
	"taboola", "advert", "sponsor", "sharing", "share-", "social", "related", "promo", "cookie",
	"subscri", "footer", "navbar", "popup", "signup", "byline", "caption"}

// posWords are class/id words of main content.
var posWords = wordSet(`article articles articlebody body content contents entry main post posts
	story stories text blog prose richtext markdown postbody storybody entrycontent`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// splitWords splits a class or id into lower-case words at punctuation and
// camelCase boundaries.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	var prev rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return words
}

// classVerdict classifies an element by its class and id: -1 furniture,
// +1 content, 0 unknown. strong reports a strongly negative word.
func classVerdict(n *html.Node) (verdict int, strong bool) {
	neg, pos := 0, 0
	check := func(name string) {
		if name == "" || len(name) > 200 {
			return
		}
		words := splitWords(name)
		lname := strings.ToLower(name)
		isNeg, isPos, isStrong := false, false, false
		lastNeg, lastPos := -1, -1
		for i, w := range words {
			if negWords[w] {
				isNeg, lastNeg = true, i
				if strongNegWords[w] {
					isStrong = true
				}
			}
			if posWords[w] {
				isPos, lastPos = true, i
			}
		}
		embed := false
		for _, w := range words {
			if w == "embed" || w == "embedded" || w == "tweet" {
				embed = true
			}
		}
		if !isNeg && !embed {
			for _, s := range negStems {
				if strings.Contains(lname, s) {
					isNeg, isStrong, lastNeg = true, true, len(words)
					break
				}
			}
		}
		if embed {
			// Embedded posts (tweets, videos with text) inside an article
			// are part of it even when their names say "social".
			isNeg = false
		}
		switch {
		case isNeg && (!isPos || isStrong || lastNeg > lastPos):
			neg++
			if isStrong {
				strong = true
			}
		case isPos:
			pos++
		}
	}
	switch attr(n, "itemprop") {
	case "articleBody", "text", "reviewBody":
		return 1, false
	}
	check(attr(n, "id"))
	for _, c := range strings.Fields(attr(n, "class")) {
		check(c)
	}
	switch {
	case neg > 0 && pos == 0:
		return -1, strong
	case neg > 0 && strong:
		return -1, strong
	case pos > 0:
		return 1, false
	}
	return 0, false
}

// isHidden reports elements hidden by attribute or inline style.
func isHidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "style":
			s := strings.ToLower(strings.ReplaceAll(a.Val, " ", ""))
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		}
	}
	return false
}

// measure fills e.size for every element under body and returns body's
// size: all text, and the text of prose-like runs (see scoreBlocks).
func (e *extractor) measure(body *html.Node) textSize {
	e.size = map[*html.Node]textSize{}
	for n, sc := range scoreBlocks(body) {
		e.size[n] = textSize{all: sc.good + sc.bad, para: sc.good}
	}
	return e.size[body]
}

// prune removes page furniture under body: non-content tags, hidden
// elements, landmark roles and elements whose class or id names furniture.
func (e *extractor) prune(body *html.Node) {
	total := e.measure(body)
	nodes := 0
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch c.Type {
			case html.CommentNode, html.DoctypeNode:
				n.RemoveChild(c)
			case html.ElementNode:
				nodes++
				if depth > maxDepth || nodes > e.opts.MaxNodes || e.isFurniture(c, total) {
					n.RemoveChild(c)
				} else {
					walk(c, depth+1)
				}
			}
			c = next
		}
	}
	walk(body, 0)
}

func (e *extractor) isFurniture(n *html.Node, total textSize) bool {
	tag := n.Data
	if dropTags[tag] {
		return true
	}
	if isHidden(n) {
		return true
	}
	if r := strings.ToLower(attr(n, "role")); dropRoles[r] {
		return true
	}
	size := e.size[n]
	// holdsMain: the element carries most of the page's paragraph text.
	holdsMain := total.para > 0 && size.para*2 > total.para
	switch tag {
	case "body", "main", "html":
		return false
	case "header", "form":
		// A header holds the headline and byline; keep it (and forms,
		// which some sites wrap around everything) only when it carries a
		// large share of the text.
		return !holdsMain && size.all*3 < total.all
	}
	v, _ := classVerdict(n)
	if v >= 0 {
		return false
	}
	// A furniture-named element that holds most of the page's paragraph
	// text is more likely a mis-named wrapper.
	return !holdsMain
}

// weightedLen counts non-space runes, CJK and Hangul twice (they carry
// more per character than alphabetic scripts).
func weightedLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r <= ' ' || unicode.IsSpace(r):
		case r < 0x2E80:
			n++
		case isWide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

func isWide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}
