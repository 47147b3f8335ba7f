package extract

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

type meta struct {
	title, h1, byline, siteName, description string
	canonical, lang                          string
	published                                time.Time
	// ldBody is the longest body text a JSON-LD object states
	// (articleBody, text, reviewBody or description), markup removed.
	ldBody string
	// ldStated is the longest body a JSON-LD object states as the page's
	// content (see ldStatedBody).
	ldStated string
	// declared is what the page says it is (see declare).
	declared declared
}

// maxJSONLD caps the size of one JSON-LD script that is decoded, and
// maxJSONLDScripts and maxMetaTags how many scripts and <meta> tags are
// read.
const (
	maxJSONLD        = 1 << 20
	maxJSONLDScripts = 64
	maxMetaTags      = 4096
)

// parseBase resolves the page's base URL from pageURL and <base href>.
func parseBase(pageURL string, doc *html.Node) *url.URL {
	base, err := url.Parse(strings.TrimSpace(pageURL))
	if err != nil {
		base = nil
	}
	if b := firstElement(doc, "base", 6); b != nil {
		if href := attr(b, "href"); href != "" {
			if u, err := url.Parse(strings.TrimSpace(href)); err == nil {
				if base != nil {
					u = base.ResolveReference(u)
				}
				if u.IsAbs() {
					base = u
				}
			}
		}
	}
	return base
}

// resolve makes href absolute against base; it returns "" for empty,
// unparsable or non-http(s) references.
func resolve(base *url.URL, href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	return u.String()
}

// firstElement finds the first element named tag within maxDepth levels.
func firstElement(n *html.Node, tag string, maxDepth int) *html.Node {
	if maxDepth < 0 {
		return nil
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == tag {
			return c
		}
		if f := firstElement(c, tag, maxDepth-1); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// readMeta reads the page's metadata. Selection is by goquery over the
// tree already parsed (no second parse): <meta> properties, the canonical
// link, JSON-LD, <time>, microdata dates, rel=author, the first h1.
func readMeta(doc *html.Node, base *url.URL) meta {
	var m meta
	d := goquery.NewDocumentFromNode(doc)
	first := func(sel, attrName string) string {
		v, _ := d.Find(sel).First().Attr(attrName)
		return strings.TrimSpace(v)
	}
	firstText := func(sel string) string {
		if n := d.Find(sel).First(); n.Length() > 0 {
			return textOf(n.Get(0))
		}
		return ""
	}
	m.lang = firstNonEmpty(first("html[lang]", "lang"), first("html[xml\\:lang]", "xml:lang"))
	docTitle := firstText("title")
	m.h1 = firstText("h1")
	canonical := first("link[rel~=canonical i][href]", "href")
	timeAttr := first("time[datetime]", "datetime")
	relAuthor := firstText("a[rel~=author i]")
	itemDate := ""
	if n := d.Find("[itemprop=datePublished]").First(); n.Length() > 0 {
		itemDate = firstNonEmpty(n.AttrOr("datetime", ""), n.AttrOr("content", ""))
	}

	props := map[string]string{} // lower-cased meta name/property → first content
	d.Find("meta[content]").EachWithBreak(func(i int, s *goquery.Selection) bool {
		content := strings.TrimSpace(s.AttrOr("content", ""))
		if content == "" {
			return true
		}
		for _, k := range []string{"property", "name", "itemprop", "http-equiv"} {
			if v := strings.ToLower(strings.TrimSpace(s.AttrOr(k, ""))); v != "" {
				if _, ok := props[v]; !ok {
					props[v] = content
				}
			}
		}
		return i < maxMetaTags
	})

	var ld []map[string]any
	st := statement{ogType: strings.ToLower(props["og:type"])}
	d.Find(`script[type*="ld+json" i]`).EachWithBreak(func(i int, s *goquery.Selection) bool {
		c := s.Get(0).FirstChild
		if c == nil {
			return true
		}
		st.anyLD = true
		if len(c.Data) <= maxJSONLD {
			ld = append(ld, decodeJSONLD(c.Data)...)
			st.discussionLD = st.discussionLD || namesDiscussion(c.Data)
		}
		return i < maxJSONLDScripts
	})
	st.ld = ld
	m.declared = declare(d, st)

	art := pickArticleLD(ld)
	m.ldBody = ldBody(ld)
	m.ldStated = ldStatedBody(ld)
	str := func(o map[string]any, k string) string {
		if o == nil {
			return ""
		}
		return ldString(o[k])
	}

	// Title: the JSON-LD headline or og:title when given, else the <title>
	// with a site suffix cut off, preferring the h1 when the title holds it.
	m.title = firstNonEmpty(str(art, "headline"), props["og:title"], props["twitter:title"])
	if m.title == "" {
		m.title = cleanTitle(docTitle, m.h1)
	}
	m.title = collapseSpace(m.title)
	m.h1 = collapseSpace(m.h1)

	m.byline = firstNonEmpty(ldPersons(art, "author"), props["author"], props["article:author"],
		props["byl"], props["dc.creator"], relAuthor)
	if strings.HasPrefix(m.byline, "http://") || strings.HasPrefix(m.byline, "https://") {
		m.byline = ""
	}
	m.byline = collapseSpace(m.byline)

	m.siteName = collapseSpace(firstNonEmpty(props["og:site_name"], ldName(art, "publisher"),
		props["application-name"], props["twitter:site"]))
	m.description = collapseSpace(firstNonEmpty(props["description"], props["og:description"],
		props["twitter:description"], str(art, "description")))

	for _, s := range []string{
		str(art, "datePublished"), props["article:published_time"], props["og:published_time"],
		props["published_time"], props["datepublished"], props["pubdate"], props["publishdate"],
		props["publish-date"], props["date"], props["dc.date.issued"], props["dc.date"],
		props["dcterms.created"], props["sailthru.date"], props["parsely-pub-date"],
		itemDate, timeAttr, str(art, "dateCreated"), props["article:modified_time"], str(art, "dateModified"),
	} {
		if t, ok := parseTime(s); ok {
			m.published = t
			break
		}
	}

	if c := firstNonEmpty(canonical, props["og:url"]); c != "" {
		m.canonical = resolve(base, c)
	}
	if m.canonical == "" && base != nil && base.IsAbs() {
		m.canonical = base.String()
	}

	if m.lang == "" {
		m.lang = firstNonEmpty(props["content-language"], props["language"], props["dc.language"],
			str(art, "inLanguage"), props["og:locale"])
	}
	m.lang = normalizeLang(m.lang)
	return m
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// cleanTitle removes a " | Site" or " - Site" suffix (or prefix) from a
// document title, preferring the page's h1 when the title contains it.
func cleanTitle(title, h1 string) string {
	title = collapseSpace(title)
	h1 = collapseSpace(h1)
	if h1 != "" && strings.Contains(title, h1) && len(h1) >= len(title)/3 {
		return h1
	}
	for _, sep := range []string{" | ", " - ", " – ", " — ", " :: ", " « ", " » ", " · "} {
		if parts := strings.Split(title, sep); len(parts) > 1 {
			best := ""
			for _, p := range parts {
				if len(p) > len(best) {
					best = p
				}
			}
			if len(strings.Fields(best)) >= 3 {
				return strings.TrimSpace(best)
			}
		}
	}
	return title
}

func normalizeLang(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ",; "); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, "_", "-")
	if len(s) > 35 {
		return ""
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		return strings.ToLower(s[:i]) + "-" + strings.ToUpper(s[i+1:])
	}
	return strings.ToLower(s)
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05.000Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
	"20060102",
	"2006/01/02",
	"2006/01/02 15:04:05",
	"2006.01.02",
	time.RFC1123,
	time.RFC1123Z,
	time.RFC822,
	time.RFC850,
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"January 2, 2006",
	"Jan 2, 2006",
	"2 January 2006",
	"2 Jan 2006",
	"2006年1月2日",
}

// parseTime parses the common date formats of meta tags and JSON-LD.
func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return time.Time{}, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil && t.Year() > 1900 && t.Year() < 2200 {
			return t, true
		}
	}
	return time.Time{}, false
}

// decodeJSONLD returns the JSON objects of one JSON-LD script, flattening
// top-level arrays and @graph.
func decodeJSONLD(s string) []map[string]any {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "<!--")
	s = strings.TrimSuffix(s, "-->")
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil
	}
	var out []map[string]any
	var add func(v any, depth int)
	add = func(v any, depth int) {
		if depth > 4 || len(out) > 100 {
			return
		}
		switch t := v.(type) {
		case []any:
			for _, e := range t {
				add(e, depth+1)
			}
		case map[string]any:
			out = append(out, t)
			if g, ok := t["@graph"]; ok {
				add(g, depth+1)
			}
		}
	}
	add(v, 0)
	return out
}

var articleTypes = map[string]int{
	"newsarticle": 3, "article": 3, "blogposting": 3, "reportagenewsarticle": 3,
	"analysisnewsarticle": 3, "opinionnewsarticle": 3, "reviewnewsarticle": 3,
	"backgroundnewsarticle": 3, "scholarlyarticle": 3, "techarticle": 3, "liveblogposting": 3,
	"socialmediaposting": 2, "review": 2, "report": 2, "posting": 2, "recipe": 2,
	"webpage": 1, "itempage": 1,
}

func pickArticleLD(objs []map[string]any) map[string]any {
	var best map[string]any
	bestRank := 0
	for _, o := range objs {
		rank := 0
		for _, t := range ldTypes(o["@type"]) {
			rank = max(rank, articleTypes[strings.ToLower(t)])
		}
		if rank > bestRank {
			best, bestRank = o, rank
		}
	}
	return best
}

// ldBody returns the longest articleBody, text, reviewBody or description
// of objs, as plain text with paragraphs separated by blank lines.
func ldBody(objs []map[string]any) string {
	best := ""
	for _, o := range objs {
		for _, k := range []string{"articleBody", "text", "reviewBody", "description"} {
			if s, ok := o[k].(string); ok && len(s) > len(best) {
				best = s
			}
		}
	}
	if best == "" {
		return ""
	}
	return markupText(html.UnescapeString(best))
}

// markupText returns the text of s, which may hold HTML, with a blank line
// where a block element starts or ends.
func markupText(s string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			out := strings.Split(b.String(), "\n\n")
			kept := out[:0]
			for _, p := range out {
				if p = collapseSpace(p); p != "" {
					kept = append(kept, p)
				}
			}
			return strings.Join(kept, "\n\n")
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			if blockTags[string(name)] || string(name) == "br" {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
	}
}

func ldTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func ldString(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(html.UnescapeString(t))
	case []any:
		if len(t) > 0 {
			return ldString(t[0])
		}
	case map[string]any:
		return firstNonEmpty(ldString(t["@value"]), ldString(t["name"]))
	}
	return ""
}

func ldName(o map[string]any, key string) string {
	if o == nil {
		return ""
	}
	return ldString(o[key])
}

// ldPersons joins the names of the author(s) under key.
func ldPersons(o map[string]any, key string) string {
	if o == nil {
		return ""
	}
	var names []string
	var add func(v any)
	add = func(v any) {
		switch t := v.(type) {
		case string:
			if s := strings.TrimSpace(t); s != "" {
				names = append(names, s)
			}
		case map[string]any:
			if s := ldString(t["name"]); s != "" {
				names = append(names, s)
			}
		case []any:
			for i, e := range t {
				if i >= 10 {
					break
				}
				if _, nested := e.([]any); !nested {
					add(e)
				}
			}
		}
	}
	add(o[key])
	return strings.Join(names, ", ")
}
