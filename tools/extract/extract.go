// Package extract pulls the main content (article text) and metadata out of
// an HTML page. It uses generic signals only — text and link density,
// paragraph shape, boilerplate words in class and id attributes, semantic
// tags — and no rules keyed on particular sites.
//
// Pages are not all articles. When the container chosen for the content
// holds only a small share of the page's text, the page is a page of items
// (a listing, a shop's collection, a service page) and the whole pruned
// page is rendered with its items' titles. A copy of the content for
// crawlers in <noscript> is read when it holds more text than the rest (forum
// software does this), and a page whose class names would remove nearly
// all of its prose is read again trusting tags, roles and visibility only.
// A page whose HTML holds next to no content but whose JSON-LD states a
// body (a product description, an article rendered by scripts) gives that
// body.
//
// A page is also read by what its metadata says it is (see declare): on
// one product's page the customers' reviews and the other products' cards
// are furniture; on a page that is not a post (an article, a thread) the
// sections a theme names like furniture (a hero "banner", a "cta", a
// carousel of its own words) are its content; on a post, a newsletter
// sign-up box and the author's box are not; on a thread, the replies named
// "comment" are. The repeated parts of a page's items (see pageItem) are
// kept whatever their class names say, and a thread's posts are not taken
// for teaser cards (see postList).
//
// Text that nothing ever shows is not content, whatever it says: an element
// hidden with nothing on the page to open it (a control, a tab, a script
// naming it), text of font size 0, boxes clipped to nothing and the
// screen-reader-only class. Panels a control opens (accordions, tabs) are,
// and so is the rest of an article hidden until a "Continue reading"
// control right after it opens it (see readMoreBox).
//
// Thresholds are chosen by cross-validation by site on a corpus of page
// types (see package extractbench and Tuning).
//
// Extract is safe on hostile input: the input is capped (Options.MaxBytes),
// the HTML parser rejects nesting deeper than 512 elements (such input is
// flattened and parsed again), the number of elements examined is capped
// (Options.MaxNodes), and every walk is linear in the size of the tree.
package extract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// Article is what Extract finds in a page. Fields it cannot find are empty
// (Published is the zero time).
type Article struct {
	Title        string    `json:"title"`
	Byline       string    `json:"byline,omitempty"`
	SiteName     string    `json:"site_name,omitempty"`
	Lang         string    `json:"lang,omitempty"`
	CanonicalURL string    `json:"canonical_url,omitempty"`
	Description  string    `json:"description,omitempty"`
	Published    time.Time `json:"published,omitzero"`
	// Text is the main text without the headline, paragraphs separated by a
	// blank line.
	Text string `json:"text"`
	// Markdown is the main content with headings, lists, quotes, code and
	// tables kept as markdown, links as [text](absolute URL).
	Markdown string `json:"markdown"`
	// Links are the absolute http(s) URLs linked from the main content, in
	// order of first appearance, without duplicates.
	Links []string `json:"links,omitempty"`
	// Truncated reports that the input was longer than Options.MaxBytes and
	// only its beginning was read.
	Truncated bool `json:"truncated,omitempty"`
}

// Options tune Extract. The zero value is ready to use.
type Options struct {
	// MaxBytes caps how much of the input is read (default 16 MiB). Longer
	// input is cut and Article.Truncated is set.
	MaxBytes int64
	// MaxNodes caps how many elements are examined (default 300000); the
	// rest of a larger tree is ignored.
	MaxNodes int
	// Tuning overrides thresholds of the content heuristics. The zero
	// value keeps the defaults.
	Tuning Tuning
}

// Tuning holds the thresholds of the content heuristics; a zero field keeps
// its default. The defaults were chosen by cross-validation by site (see
// package extractbench, which searches alternatives on training folds and
// scores them on held-out ones); callers other than a benchmark have no
// reason to set them.
type Tuning struct {
	// BlockCost is what every run of text costs its containers when the
	// root is chosen (default 10): a run shorter than this counts against
	// them.
	BlockCost int
	// DescendPercent is the share of its parent's value a child must hold
	// for the child to be preferred as the root (default 95).
	DescendPercent int
	// BroadPercent: when the chosen container's text is less than this
	// share of the text of the whole (pruned) page, the page is not one
	// article but many items (a listing, a shop, a service page) and the
	// whole page is rendered instead (default 25).
	BroadPercent int
	// MinItemLink is the length (in weighted characters) from which a
	// block that is all link text is kept on such a page: an item's title
	// rather than a menu entry (default 15).
	MinItemLink int
	// MinContent is the length of content (weighted characters) below
	// which a page with four times as much prose is read again without
	// trusting class names (default 250).
	MinContent int
}

func (t Tuning) withDefaults() Tuning {
	if t.BlockCost <= 0 {
		t.BlockCost = defaultBlockCost
	}
	if t.DescendPercent <= 0 || t.DescendPercent > 100 {
		t.DescendPercent = defaultDescendPercent
	}
	if t.BroadPercent <= 0 {
		t.BroadPercent = defaultBroadPercent
	}
	if t.MinItemLink <= 0 {
		t.MinItemLink = defaultMinItemLink
	}
	if t.MinContent <= 0 {
		t.MinContent = defaultMinContent
	}
	return t
}

const (
	defaultMaxBytes = 16 << 20
	defaultMaxNodes = 300_000
	// maxDepth is kept below the parser's own limit of 512 open elements.
	maxDepth = 400
)

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = defaultMaxNodes
	}
	o.Tuning = o.Tuning.withDefaults()
	return o
}

// ErrRead reports that the input could not be read.
var ErrRead = errors.New("extract: read input")

// Extract reads an HTML page from r and returns its main content and
// metadata. pageURL (may be empty) resolves relative links and is the
// fallback canonical URL. The input may be in any encoding declared by the
// page or detectable from it; the output is always valid UTF-8. A page
// without recognisable content gives an Article with an empty Text and no
// error.
func Extract(r io.Reader, pageURL string, opts Options) (*Article, error) {
	opts = opts.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRead, err)
	}
	truncated := int64(len(data)) > opts.MaxBytes
	if truncated {
		data = data[:opts.MaxBytes]
	}
	a, err := ExtractBytes(data, pageURL, opts)
	if a != nil {
		a.Truncated = truncated
	}
	return a, err
}

// ExtractBytes is Extract over a page already in memory.
func ExtractBytes(data []byte, pageURL string, opts Options) (*Article, error) {
	opts = opts.withDefaults()
	data = fixMojibake(toUTF8(data))
	doc, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("extract: parse html: %w", err)
	}
	base := parseBase(pageURL, doc)
	a := &Article{}
	m := readMeta(doc, base)
	a.Title, a.Byline, a.SiteName, a.Description = m.title, m.byline, m.siteName, m.description
	a.CanonicalURL, a.Published, a.Lang = m.canonical, m.published, m.lang

	if body := findBody(doc); body != nil {
		// doc and body are not read after this: the second reading
		// below does not hold two trees.
		c := extractContent(body, base, opts, a.Title, a.Description, m.declared, false)
		if mc := opts.Tuning.MinContent; chars(c.blocks) < mc && (c.prose >= 4*mc || len(c.blocks) == 0 && c.prose > 0) {
			// The page has prose but class names removed nearly all of
			// it: they lie (a theme that calls every section a "promo" or a
			// "hero"). Read the page again trusting tags, roles and
			// visibility only, and keep that when it finds more (see
			// lenientBetter). So is a page with less prose whose class
			// names removed all of it (a short post in a "share" card).
			if doc2, err := parse(data); err == nil {
				if body2 := findBody(doc2); body2 != nil {
					if c2 := extractContent(body2, base, opts, a.Title, a.Description, m.declared, true); lenientBetter(c, c2, mc) {
						c = c2
					}
				}
			}
		}
		if mc := opts.Tuning.MinContent; chars(c.blocks) < mc && weightedLen(m.ldBody) > 2*chars(c.blocks) {
			// The page's HTML holds next to no content, but its JSON-LD
			// states a body (a shop's product description, an article
			// rendered by scripts): that is the content.
			c.blocks, c.links = textBlocks(m.ldBody), nil
		} else if chars(c.blocks) < 2*mc && weightedLen(m.ldStated) > chars(c.blocks) {
			// More content, but still little, and the JSON-LD states a
			// longer body as the page's own: an article's body or a
			// product's description, not a summary (see ldStatedBody).
			// Chosen on the training folds of the cross-validation by
			// site: a body merely longer did better than one twice as
			// long on all five (than 1.5 times on four, the fifth tied);
			// of the bounds on the content tried (1, 2, 3, 4 and 8 times
			// MinContent), 1 did worse on all five and the others tied:
			// 2 is the least.
			c.blocks, c.links = textBlocks(m.ldStated), nil
		}
		a.Text = blocksText(c.blocks)
		a.Markdown = blocksMarkdown(c.blocks)
		a.Links = c.links
		if a.Title == "" {
			a.Title = m.h1
		}
	}
	if a.Lang == "" {
		a.Lang = guessLang(a.Title + "\n" + a.Text)
	}
	sanitize(a)
	return a, nil
}

// lenientBetter reports whether c2, the page read again without trusting
// class names, is taken over c: it holds more, and when c is a story
// under the page's title (a short post), it holds that story too. A
// sidebar that names itself as one, read again, holds more text than a
// post of two paragraphs, and it is not the post. On a page of little
// prose (read again because nothing was left), c2 must hold mc or more:
// a short notice (a modal's "You are now leaving") is not content.
func lenientBetter(c, c2 content, mc int) bool {
	if chars(c2.blocks) <= chars(c.blocks) || c.prose < 4*mc && chars(c2.blocks) < mc {
		return false
	}
	return !c.titled || strings.Contains(normText(blocksText(c2.blocks)), normText(blocksText(c.blocks)))
}

// textBlocks turns plain text whose paragraphs are separated by blank
// lines into blocks.
func textBlocks(text string) []block {
	var out []block
	for _, p := range strings.Split(text, "\n\n") {
		out = append(out, block{kind: kindPara, text: p, md: mdEscape(p), chars: weightedLen(p)})
	}
	return out
}

// content is what one reading of a page's body found: the blocks of its
// main content, the links in them, and the length of the body's prose
// before pruning.
type content struct {
	blocks []block
	links  []string
	prose  int
	// titled reports that the blocks are a story under a heading that
	// is the page's title (see pageTitle.story).
	titled bool
}

// extractContent prunes body and returns its main content; desc is the
// page's description, d is what the page says it is, and lenient ignores
// class and id names.
func extractContent(body *html.Node, base *url.URL, opts Options, title, desc string, d declared, lenient bool) content {
	e := newExtractor(base, opts)
	e.lenient = lenient
	e.normTitle = normText(title)
	e.normDesc = normText(desc)
	e.sheet = readSheet(body)
	e.product, e.sections, e.discussion = d.product, !d.post, d.discussion
	e.prune(body)
	blocks := e.content(body, title)
	return content{blocks: blocks, links: e.links, prose: e.sizeOf(body).para, titled: e.titled}
}

// toUTF8 converts the page to UTF-8 from whatever encoding its BOM, meta
// tags or content suggest. Bytes that are UTF-8 are taken as UTF-8 whatever
// the page declares (servers and templates often declare a charset the
// page is not in), also when a few bytes are not: input cut inside a
// character, or a stray byte.
func toUTF8(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	if mostlyUTF8(data) {
		return bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	enc, name, _ := charset.DetermineEncoding(data, "")
	if enc == nil || name == "utf-8" {
		return bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	return out
}

// mostlyUTF8 reports whether data's non-ASCII bytes are nearly all
// well-formed UTF-8 sequences: at least one multi-byte character and at
// most one invalid byte for every maxInvalidPer of them. Text in a legacy
// single-byte encoding (é as 0xE9 before an ASCII letter) is almost never
// well-formed UTF-8.
func mostlyUTF8(data []byte) bool {
	valid, invalid := 0, 0
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			invalid++
			i++
			continue
		}
		valid++
		i += n
	}
	return valid > 0 && invalid*maxInvalidPer <= valid
}

// maxInvalidPer: one invalid byte per this many UTF-8 characters still
// counts as UTF-8 (see mostlyUTF8).
const maxInvalidPer = 20

// parse parses HTML; if the parser refuses the input for being nested too
// deeply, the input is flattened beyond maxDepth and parsed again.
func parse(data []byte) (*html.Node, error) {
	doc, err := html.ParseWithOptions(bytes.NewReader(data), html.ParseOptionEnableScripting(false))
	if err == nil {
		return doc, nil
	}
	doc, err2 := html.ParseWithOptions(bytes.NewReader(flatten(data, maxDepth/2)), html.ParseOptionEnableScripting(false))
	if err2 != nil {
		return nil, err
	}
	return doc, nil
}

// flatten rewrites data dropping start and end tags of elements nested
// deeper than limit (counted naively), keeping all text.
func flatten(data []byte, limit int) []byte {
	var out bytes.Buffer
	z := html.NewTokenizer(bytes.NewReader(data))
	depth, dropped := 0, 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return out.Bytes()
		case html.StartTagToken:
			name, _ := z.TagName()
			if voidElements[string(name)] {
				out.Write(z.Raw())
				continue
			}
			if depth >= limit {
				dropped++
				continue
			}
			depth++
			out.Write(z.Raw())
		case html.EndTagToken:
			if dropped > 0 {
				dropped--
				continue
			}
			if depth > 0 {
				depth--
			}
			out.Write(z.Raw())
		default:
			out.Write(z.Raw())
		}
	}
}

var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

func findBody(doc *html.Node) *html.Node {
	var walk func(n *html.Node, depth int) *html.Node
	walk = func(n *html.Node, depth int) *html.Node {
		if depth > 3 {
			return nil
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.Data == "body" {
				return c
			}
			if b := walk(c, depth+1); b != nil {
				return b
			}
		}
		return nil
	}
	return walk(doc, 0)
}

// sanitize makes every string field valid UTF-8 without NUL bytes.
func sanitize(a *Article) {
	for _, p := range []*string{&a.Title, &a.Byline, &a.SiteName, &a.Lang, &a.CanonicalURL,
		&a.Description, &a.Text, &a.Markdown} {
		*p = cleanString(*p)
	}
	for i := range a.Links {
		a.Links[i] = cleanString(a.Links[i])
	}
}

func cleanString(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}
